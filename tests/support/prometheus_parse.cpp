#include "support/prometheus_parse.hpp"

#include <arpa/inet.h>
#include <cctype>
#include <cstdlib>
#include <netinet/in.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace rdmanet::test {

namespace {

bool name_char(char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           (!first && std::isdigit(static_cast<unsigned char>(c)));
}

// The family a sample belongs to: histogram/summary samples carry a suffix.
std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
    if (types.count(name)) return name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        const std::string s = suffix;
        if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
            const auto base = name.substr(0, name.size() - s.size());
            if (types.count(base)) return base;
        }
    }
    return {};
}

double parse_value(const std::string& text, const std::string& line) {
    if (text == "+Inf") return 1.0 / 0.0;
    if (text == "-Inf") return -1.0 / 0.0;
    if (text == "NaN") return 0.0 / 0.0;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0') throw std::runtime_error("bad value in: " + line);
    return v;
}

}  // namespace

std::optional<double> PromExposition::value(const std::string& name,
                                            const std::map<std::string, std::string>& labels) const {
    for (const auto& s : samples)
        if (s.name == name && s.labels == labels) return s.value;
    return std::nullopt;
}

PromExposition parse_prometheus_text(const std::string& text) {
    PromExposition out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        if (line[0] == '#') {
            std::istringstream words(line.substr(1));
            std::string kind, family, type;
            words >> kind >> family >> type;
            if (kind == "TYPE") {
                if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
                    type != "untyped")
                    throw std::runtime_error("bad TYPE: " + line);
                if (out.types.count(family)) throw std::runtime_error("family announced twice: " + line);
                out.types[family] = type;
            }
            continue;
        }
        PromSample s;
        std::size_t i = 0;
        while (i < line.size() && name_char(line[i], i == 0)) ++i;
        s.name = line.substr(0, i);
        if (s.name.empty()) throw std::runtime_error("no metric name: " + line);
        if (i < line.size() && line[i] == '{') {
            ++i;
            while (i < line.size() && line[i] != '}') {
                std::size_t start = i;
                while (i < line.size() && name_char(line[i], i == start)) ++i;
                const std::string label = line.substr(start, i - start);
                if (label.empty() || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
                    throw std::runtime_error("bad label in: " + line);
                i += 2;
                std::string value;
                while (i < line.size() && line[i] != '"') {
                    if (line[i] == '\\' && i + 1 < line.size()) {
                        const char e = line[++i];
                        value += e == 'n' ? '\n' : e;
                    } else {
                        value += line[i];
                    }
                    ++i;
                }
                if (i >= line.size()) throw std::runtime_error("unterminated label value in: " + line);
                ++i;  // closing quote
                if (s.labels.count(label)) throw std::runtime_error("duplicate label in: " + line);
                s.labels[label] = value;
                if (i < line.size() && line[i] == ',') ++i;
            }
            if (i >= line.size()) throw std::runtime_error("unterminated label set in: " + line);
            ++i;  // '}'
        }
        if (i >= line.size() || line[i] != ' ') throw std::runtime_error("no value in: " + line);
        std::string rest = line.substr(i + 1);
        const auto space = rest.find(' ');  // an optional timestamp follows
        s.value = parse_value(rest.substr(0, space), line);
        if (family_of(s.name, out.types).empty()) throw std::runtime_error("sample without # TYPE: " + line);
        out.samples.push_back(std::move(s));
    }
    return out;
}

HttpGetResult http_get_local(int port, const std::string& path) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket failed");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + " failed");
    }
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    [[maybe_unused]] auto n = ::write(fd, req.data(), req.size());
    std::string resp;
    char buf[4096];
    ssize_t got;
    while ((got = ::read(fd, buf, sizeof buf)) > 0) resp.append(buf, static_cast<std::size_t>(got));
    ::close(fd);
    HttpGetResult r;
    const auto head_end = resp.find("\r\n\r\n");
    if (resp.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) throw std::runtime_error("not HTTP: " + resp);
    r.status = std::atoi(resp.substr(9, 3).c_str());
    const std::string head = resp.substr(0, head_end);
    const auto ct = head.find("Content-Type: ");
    if (ct != std::string::npos) r.content_type = head.substr(ct + 14, head.find("\r\n", ct) - ct - 14);
    r.body = resp.substr(head_end + 4);
    return r;
}

}  // namespace rdmanet::test
