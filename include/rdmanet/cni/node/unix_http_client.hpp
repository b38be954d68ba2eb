#pragma once
// The client's side of the node's unix-socket HTTP (unix_http_server.hpp): one request per
// connection, written as Go's net/http writes it to a unix socket (Host: localhost, Content-Length,
// JSON body: DRANET's webhook client), the answer read with the Kubernetes client's response
// parser (ipam/kube/http_wire.hpp). The node agent's claim GC releases claims through it. Inline,
// so that test clients and benchmarks that link only the IPAM library use the same code.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "rdmanet/base/fd.hpp"
#include "rdmanet/ipam/kube/http_wire.hpp"

namespace rdmanet::cni::node {

struct UnixHttpReply {
    long status = 0;  // 0: no answer (nothing listens, the connection closed, the time ran out)
    std::string body;
    std::string error;  // why there is no answer ("" with one)
};

// A connected stream socket to `path` whose reads (and writes) time out after `timeout`; an empty
// fd when nothing accepts there (errno tells why).
inline base::UniqueFd connect_unix_socket(const std::string& path, std::chrono::milliseconds timeout) {
    base::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return {};
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        return {};
    }
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return {};
    const auto ms = timeout.count();
    timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

// Writes all of `data` (stops early when the peer closes: its answer may still be readable).
inline void send_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
}

// Reads one answer to its end (or to the connection's close / the socket's read timeout).
inline UnixHttpReply read_http_reply(int fd) {
    ipam::kube::ResponseParser parser;
    char buf[16384];
    try {
        for (;;) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return {0, {}, "no answer in time"};
            if (n <= 0) {
                if (!parser.started()) return {0, {}, "the connection closed without an answer"};
                parser.end_of_stream();
                break;
            }
            parser.feed(std::string_view(buf, static_cast<std::size_t>(n)));
            if (parser.done()) break;
        }
    } catch (const std::exception& e) {
        return {0, {}, std::string("a broken answer: ") + e.what()};
    }
    auto r = parser.take();
    return {r.status, std::move(r.body), {}};
}

// One request: connect, write, read; bounded by `timeout` for the connect and each read.
inline UnixHttpReply unix_http_request(const std::string& socket_path, std::string_view method, std::string_view path,
                                       std::string_view body, std::chrono::milliseconds timeout) {
    const auto fd = connect_unix_socket(socket_path, timeout);
    if (!fd) return {0, {}, "cannot connect to " + socket_path + ": " + std::strerror(errno)};
    std::string req = std::string(method) + " " + std::string(path) + " HTTP/1.1\r\nHost: localhost\r\n";
    if (method == "POST")
        req += "Content-Length: " + std::to_string(body.size()) + "\r\nContent-Type: application/json\r\n";
    req += "\r\n";
    req += body;
    send_all(fd.get(), req);
    return read_http_reply(fd.get());
}

}  // namespace rdmanet::cni::node
