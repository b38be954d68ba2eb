// HTTP/1.1 framing: see http_wire.hpp.
#include "rdmanet/ipam/kube/http_wire.hpp"

#include <algorithm>
#include <charconv>

#include "rdmanet/ipam/kube/retry.hpp"

namespace rdmanet::ipam::kube {

namespace {

constexpr std::size_t kMaxLine = 64 * 1024;           // a status or header line longer than this is not an API server
constexpr unsigned long long kMaxReserve = 64 << 20;  // a bogus Content-Length does not reserve more

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string_view trim_header_space(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

std::string too_large(std::size_t limit, const std::string& got) {
    return "a body larger than " + std::to_string(limit >> 20) + " MiB (" + got +
           "), more than any answer to this "
           "request holds (etcd stores at most 1.5 MiB per object): refused unread";
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

}  // namespace

bool header_value_safe(std::string_view value) {
    return std::none_of(value.begin(), value.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

std::string ServerUrl::host_header() const {
    const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    const bool default_port = (tls && port == "443") || (!tls && port == "80");
    return default_port ? h : h + ":" + port;
}

ServerUrl parse_server_url(std::string_view url) {
    ServerUrl u;
    // The host and path go into the Host header and the request line.
    if (!header_value_safe(url))
        throw std::invalid_argument("the server URL contains a control character (CR, LF, ...)");
    if (url.starts_with("https://")) {
        url.remove_prefix(8);
    } else if (url.starts_with("http://")) {
        u.tls = false;
        url.remove_prefix(7);
    } else {
        throw std::invalid_argument("the server URL must start with https:// or http://");
    }
    const auto slash = url.find('/');
    std::string_view authority = url.substr(0, slash);
    if (slash != std::string_view::npos) {
        std::string_view prefix = url.substr(slash);
        while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
        if (prefix.find_first_of("?# ") != std::string_view::npos) {
            throw std::invalid_argument("the server URL has a query, fragment or space in its path");
        }
        u.path_prefix = std::string(prefix);
    }
    if (authority.find('@') != std::string_view::npos) {
        throw std::invalid_argument("the server URL carries credentials; put them in the kubeconfig's user");
    }
    std::string_view port;
    if (authority.starts_with("[")) {
        const auto close = authority.find(']');
        if (close == std::string_view::npos)
            throw std::invalid_argument("the server URL has an unclosed '[' in its host");
        u.host = std::string(authority.substr(1, close - 1));
        u.host_is_ip = true;
        std::string_view rest = authority.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') throw std::invalid_argument("the server URL has text after its IPv6 host");
            port = rest.substr(1);
        }
    } else {
        const auto colon = authority.rfind(':');
        u.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) port = authority.substr(colon + 1);
        u.host_is_ip = !u.host.empty() && std::all_of(u.host.begin(), u.host.end(),
                                                      [](unsigned char c) { return std::isdigit(c) || c == '.'; });
    }
    if (u.host.empty()) throw std::invalid_argument("the server URL has no host");
    if (u.host.find_first_of(" /?#") != std::string::npos)
        throw std::invalid_argument("the server URL's host is malformed");
    if (port.empty()) {
        u.port = u.tls ? "443" : "80";
    } else {
        unsigned value = 0;
        auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
            throw std::invalid_argument("the server URL's port is not a number from 1 to 65535");
        }
        u.port = std::string(port);
    }
    return u;
}

std::string format_request(std::string_view method, std::string_view target, const std::vector<std::string>& headers,
                           std::string_view body, bool with_body) {
    std::string out;
    out.reserve(256 + body.size());
    out.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
    for (const auto& h : headers) out.append(h).append("\r\n");
    if (with_body) out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
    out.append("\r\n");
    if (with_body) out.append(body);
    return out;
}

std::size_t ResponseParser::feed(std::string_view data) {
    if (!data.empty()) started_ = true;
    std::size_t used = 0;
    while (used < data.size() && state_ != State::done) {
        std::string_view rest = data.substr(used);
        switch (state_) {
        case State::body_length:
        case State::chunk_data: {
            const std::size_t n = static_cast<std::size_t>(std::min<unsigned long long>(remaining_, rest.size()));
            append_body(rest.substr(0, n));
            used += n;
            remaining_ -= n;
            if (remaining_ == 0) state_ = state_ == State::body_length ? State::done : State::chunk_end;
            break;
        }
        case State::body_close:
            append_body(rest);
            used += rest.size();
            break;
        default: {
            const auto nl = rest.find('\n');
            if (nl == std::string_view::npos) {
                pending_.append(rest);
                used += rest.size();
                if (pending_.size() > kMaxLine) throw ProtocolError("a response line longer than 64 KiB");
                break;
            }
            pending_.append(rest.substr(0, nl));
            used += nl + 1;
            // Framing lines count too: toward the headers' bound before the body, the body's after
            // (an endless run of empty chunks or trailers is as unbounded as an endless body).
            if (state_ == State::status_line || state_ == State::headers) {
                header_bytes_ += pending_.size() + 1;
                if (header_bytes_ > kMaxHeaderBytes)
                    throw ProtocolError("status and header lines longer than 1 MiB in all");
            } else {
                body_bytes_ += pending_.size() + 1;
                if (body_bytes_ > max_body_) throw ProtocolError(too_large(max_body_, "chunked"));
            }
            std::string text = std::move(pending_);
            pending_.clear();
            if (!text.empty() && text.back() == '\r') text.pop_back();
            line(text);
        }
        }
    }
    return used;
}

void ResponseParser::line(std::string_view text) {
    switch (state_) {
    case State::status_line: {
        // "HTTP/1.1 200 OK"
        if (!text.starts_with("HTTP/1.")) throw ProtocolError("not an HTTP/1.x status line");
        const auto sp = text.find(' ');
        const std::string_view code = sp == std::string_view::npos ? std::string_view{} : text.substr(sp + 1, 3);
        if (code.size() != 3 || !all_digits(code)) throw ProtocolError("a status line without a status code");
        http10_ = text.substr(0, sp) == "HTTP/1.0";
        response_ = ParsedResponse{};
        body_bytes_ = 0;
        response_.status = std::stol(std::string(code));
        response_.keep_alive = !http10_;
        chunked_ = false;
        content_length_.reset();
        state_ = State::headers;
        break;
    }
    case State::headers:
        if (text.empty()) {
            headers_done();
        } else {
            header_line(text);
        }
        break;
    case State::chunk_size: {
        std::string_view size = trim_header_space(text.substr(0, text.find(';')));
        unsigned long long n = 0;
        auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), n, 16);
        if (size.empty() || ec != std::errc() || end != size.data() + size.size()) {
            throw ProtocolError("a malformed chunk size");
        }
        remaining_ = n;
        state_ = n == 0 ? State::trailers : State::chunk_data;
        break;
    }
    case State::chunk_end:
        if (!text.empty()) throw ProtocolError("a chunk not followed by CRLF");
        state_ = State::chunk_size;
        break;
    case State::trailers:
        if (text.empty()) state_ = State::done;
        break;
    default: break;
    }
}

void ResponseParser::header_line(std::string_view text) {
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) throw ProtocolError("a header line without ':'");
    const std::string name = lower(trim_header_space(text.substr(0, colon)));
    const std::string_view value = trim_header_space(text.substr(colon + 1));
    if (name == "content-length") {
        unsigned long long n = 0;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
            throw ProtocolError("a malformed Content-Length");
        }
        if (content_length_ && *content_length_ != n) throw ProtocolError("conflicting Content-Length headers");
        content_length_ = n;
    } else if (name == "transfer-encoding") {
        const std::string v = lower(value);
        if (v.ends_with("chunked")) {
            chunked_ = true;
        } else {
            throw ProtocolError("an unsupported Transfer-Encoding: " + std::string(value));
        }
    } else if (name == "connection") {
        const std::string v = lower(value);
        if (v.find("close") != std::string::npos) response_.keep_alive = false;
        if (v.find("keep-alive") != std::string::npos && http10_) response_.keep_alive = true;
    } else if (name == "retry-after") {
        response_.retry_after = parse_retry_after(value);
    }
}

void ResponseParser::headers_done() {
    const long s = response_.status;
    if (s >= 100 && s < 200) {  // an interim answer (100 Continue): the real one follows
        state_ = State::status_line;
        return;
    }
    keep_body_ = !(discard_success_ && s >= 200 && s < 300);
    if (s == 204 || s == 304) {
        state_ = State::done;
    } else if (chunked_) {
        state_ = State::chunk_size;
    } else if (content_length_) {
        remaining_ = *content_length_;
        if (remaining_ > max_body_)
            throw ProtocolError(too_large(max_body_, "Content-Length " + std::to_string(remaining_)));
        if (keep_body_) response_.body.reserve(static_cast<std::size_t>(std::min(remaining_, kMaxReserve)));
        state_ = remaining_ == 0 ? State::done : State::body_length;
    } else {
        response_.keep_alive = false;  // the body ends when the server closes
        state_ = State::body_close;
    }
}

void ResponseParser::append_body(std::string_view data) {
    body_bytes_ += data.size();
    if (body_bytes_ > max_body_) throw ProtocolError(too_large(max_body_, "more"));
    if (keep_body_) response_.body.append(data);
}

void ResponseParser::end_of_stream() {
    if (state_ == State::body_close) {
        state_ = State::done;
        return;
    }
    if (state_ != State::done) {
        throw ProtocolError(started_ ? "the connection closed in the middle of the answer"
                                     : "the connection closed without an answer");
    }
}

}  // namespace rdmanet::ipam::kube
