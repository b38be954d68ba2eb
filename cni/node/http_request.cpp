// The node servers' HTTP request parser and response bytes: see http_request.hpp.
#include "rdmanet/cni/node/http_request.hpp"

#include <algorithm>
#include <cctype>

namespace rdmanet::cni::node {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

bool is_token(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
        return std::isalnum(c) ||
               std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    });
}

}  // namespace

void RequestParser::fail(int status, std::string message) {
    state_ = State::failed;
    error_status_ = status;
    error_message_ = std::move(message);
    buffer_.clear();
}

void RequestParser::feed(std::string_view data) {
    if (state_ == State::done || state_ == State::failed) return;
    if (state_ == State::head) {
        // Only as much as the head may hold (plus the body that can follow it in the same read).
        buffer_.append(data);
        std::size_t end = buffer_.find("\r\n\r\n");
        std::size_t sep = 4;
        if (end == std::string::npos) {
            end = buffer_.find("\n\n");
            sep = 2;
        }
        if (end == std::string::npos) {
            if (buffer_.size() > limits_.max_head)
                fail(431, "request head larger than " + std::to_string(limits_.max_head) + " bytes");
            return;
        }
        if (end > limits_.max_head)
            return fail(431, "request head larger than " + std::to_string(limits_.max_head) + " bytes");
        const std::string head = buffer_.substr(0, end);
        std::string rest = buffer_.substr(end + sep);
        buffer_.clear();
        parse_head(head);
        if (state_ == State::failed) return;
        state_ = State::body;
        data = std::string_view{};
        buffer_ = std::move(rest);
        if (buffer_.size() > body_length_) buffer_.resize(body_length_);
    } else {
        const std::size_t want = body_length_ - buffer_.size();
        buffer_.append(data.substr(0, std::min(want, data.size())));
    }
    if (state_ == State::body && buffer_.size() >= body_length_) {
        request_.body = std::move(buffer_);
        buffer_.clear();
        state_ = State::done;
    }
}

void RequestParser::parse_head(std::string_view head) {
    std::size_t line_end = head.find('\n');
    std::string_view line = trim(head.substr(0, line_end));
    const auto sp1 = line.find(' ');
    const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos)
        return fail(400, "malformed request line (expected METHOD TARGET HTTP/1.x)");
    request_.method = std::string(line.substr(0, sp1));
    std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string_view version = line.substr(sp2 + 1);
    if (!is_token(request_.method)) return fail(400, "malformed request method");
    if (target.empty() || target.front() != '/')
        return fail(400, "the request target must be a path starting with '/'");
    if (version.rfind("HTTP/", 0) != 0) return fail(400, "malformed request line (expected METHOD TARGET HTTP/1.x)");
    if (version != "HTTP/1.1" && version != "HTTP/1.0") return fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
    request_.path = std::string(target.substr(0, target.find('?')));

    while (line_end != std::string_view::npos) {
        const std::size_t start = line_end + 1;
        line_end = head.find('\n', start);
        const std::string_view header =
            trim(head.substr(start, line_end == std::string_view::npos ? head.npos : line_end - start));
        if (header.empty()) continue;
        const auto colon = header.find(':');
        if (colon == std::string_view::npos || colon == 0 || !is_token(header.substr(0, colon)))
            return fail(400, "malformed header line");
        const std::string name = lower(header.substr(0, colon));
        const std::string value(trim(header.substr(colon + 1)));
        auto [it, inserted] = request_.headers.emplace(name, value);
        if (!inserted && name == "content-length" && it->second != value)
            return fail(400, "conflicting Content-Length headers");
    }
    if (request_.headers.contains("transfer-encoding"))
        return fail(501, "Transfer-Encoding is not served: send the body with a Content-Length");
    if (auto it = request_.headers.find("content-length"); it != request_.headers.end()) {
        const std::string& v = it->second;
        if (v.empty() || v.size() > 19 ||
            !std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); }))
            return fail(400, "Content-Length is not a number");
        const unsigned long long n = std::stoull(v);
        if (n > limits_.max_body)
            return fail(413, "request body of " + v + " bytes is larger than the limit of " +
                                 std::to_string(limits_.max_body) + " bytes");
        body_length_ = static_cast<std::size_t>(n);
    }
}

std::string_view reason_phrase(int status) {
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

std::string format_response(int status, std::string_view content_type, std::string_view body) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason_phrase(status)) + "\r\n";
    out += "Content-Type: " + std::string(content_type) + "\r\n";
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    out += "Connection: close\r\n\r\n";
    out += body;
    return out;
}

}  // namespace rdmanet::cni::node
