#include "rdmanet/cni/node/metrics_server.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmanet/cni/node/prometheus_text.hpp"

namespace rdmanet::cni::node {

namespace {

constexpr int kReadTimeoutMs = 2000;

void write_all(int fd, const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
    }
}

// The request head (up to the blank line), "" on timeout or a head larger than 8 KiB.
std::string read_head(int fd) {
    std::string head;
    char buf[1024];
    while (head.find("\r\n\r\n") == std::string::npos && head.find("\n\n") == std::string::npos) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, kReadTimeoutMs) <= 0) return {};
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        head.append(buf, static_cast<std::size_t>(n));
        if (head.size() > 8192) return {};
    }
    return head;
}

std::string response(const std::string& status, const std::string& content_type, const std::string& body) {
    return "HTTP/1.0 " + status + "\r\nContent-Type: " + content_type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

MetricsServer::MetricsServer(const std::string& address) {
    const auto colon = address.rfind(':');
    if (colon == std::string::npos) throw std::runtime_error("metrics address \"" + address + "\": expected HOST:PORT");
    std::string host = address.substr(0, colon);
    const std::string port_text = address.substr(colon + 1);
    int port = -1;
    try {
        std::size_t used = 0;
        port = std::stoi(port_text, &used);
        if (used != port_text.size()) port = -1;
    } catch (const std::exception&) {
    }
    if (port < 0 || port > 65535) throw std::runtime_error("metrics address \"" + address + "\": bad port");

    sockaddr_storage ss{};
    socklen_t len = 0;
    int family = AF_INET;
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        family = AF_INET6;
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(static_cast<uint16_t>(port));
        if (::inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a->sin6_addr) != 1)
            throw std::runtime_error("metrics address \"" + address + "\": bad IPv6 address");
        len = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        a->sin_port = htons(static_cast<uint16_t>(port));
        if (::inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1)
            throw std::runtime_error("metrics address \"" + address + "\": bad IPv4 address (use 0.0.0.0 for all)");
        len = sizeof *a;
    }
    fd_ = base::UniqueFd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd_) throw std::runtime_error("metrics socket: " + std::string(std::strerror(errno)));
    const int one = 1;
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd_.get(), 16) != 0)
        throw std::runtime_error("metrics address \"" + address + "\": " + std::strerror(errno));
    sockaddr_storage bound{};
    socklen_t bound_len = sizeof bound;
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&bound), &bound_len);
    port_ = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                     : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

void MetricsServer::serve_one(const std::function<std::string()>& body) const {
    const base::UniqueFd client(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client) return;
    const std::string head = read_head(client.get());
    if (head.empty()) return;
    const auto line_end = head.find_first_of("\r\n");
    const std::string line = head.substr(0, line_end);
    const auto sp1 = line.find(' ');
    const auto sp2 = line.find(' ', sp1 == std::string::npos ? 0 : sp1 + 1);
    const std::string method = line.substr(0, sp1);
    const std::string target = sp1 == std::string::npos ? "" : line.substr(sp1 + 1, sp2 - sp1 - 1);
    if (method != "GET") return write_all(client.get(), response("405 Method Not Allowed", "text/plain", "only GET\n"));
    if (target != "/metrics" && target.rfind("/metrics?", 0) != 0)
        return write_all(client.get(), response("404 Not Found", "text/plain", "metrics are at /metrics\n"));
    std::string text;
    try {
        text = body();
    } catch (const std::exception& e) {
        return write_all(client.get(),
                         response("500 Internal Server Error", "text/plain", std::string(e.what()) + "\n"));
    }
    write_all(client.get(), response("200 OK", PrometheusText::kContentType, text));
}

}  // namespace rdmanet::cni::node
