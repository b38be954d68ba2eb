// The node's unix-socket HTTP server: see unix_http_server.hpp.
#include "rdmanet/cni/node/unix_http_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace rdmanet::cni::node {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string parent_of(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

void send_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
            pollfd p{fd, POLLOUT, 0};
            if (::poll(&p, 1, 2000) <= 0) return;  // a client that reads nothing is dropped
            continue;
        }
        if (n <= 0) return;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
}

// After an early error answer: read what the client is still sending for a moment, so that it
// receives the answer instead of a reset (closing with unread data resets the connection).
void drain(int fd) {
    ::shutdown(fd, SHUT_WR);
    char buf[16384];
    std::size_t total = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (total < 4 * 1024 * 1024 && std::chrono::steady_clock::now() < end) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) return;
        total += static_cast<std::size_t>(n);
    }
}

std::string error_body(const std::string& message) {
    // The message is ours (never the client's raw bytes); JSON-escape the quote and backslash.
    std::string escaped;
    for (char c : message) {
        if (c == '"' || c == '\\') escaped += '\\';
        if (static_cast<unsigned char>(c) >= 0x20) escaped += c;
    }
    return "{\"error\":\"" + escaped + "\"}\n";
}

}  // namespace

void prepare_socket_directory(const std::string& socket_path) {
    if (socket_path.empty() || socket_path.front() != '/')
        throw std::runtime_error("--socket \"" + socket_path + "\": give an absolute path");
    if (socket_path.size() >= sizeof(sockaddr_un{}.sun_path))
        throw std::runtime_error("--socket \"" + socket_path + "\": longer than a unix socket path can be (" +
                                 std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes)");
    const std::string dir = parent_of(socket_path);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) {
        if (errno != ENOENT) throw std::runtime_error("socket directory " + dir + ": " + errno_text());
        // Only the last component is created: its parent must already be a safe directory.
        const std::string grand = parent_of(dir);
        struct stat gst {};
        if (::stat(grand.c_str(), &gst) != 0 || !S_ISDIR(gst.st_mode))
            throw std::runtime_error("socket directory " + dir + " is missing and so is its parent " + grand +
                                     ": create it (root-owned, mode 0700 or 0755)");
        if (gst.st_uid != 0 || (gst.st_mode & (S_IWGRP | S_IWOTH)))
            throw std::runtime_error("cannot create socket directory " + dir + ": its parent " + grand +
                                     " is writable by others than root");
        if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
            throw std::runtime_error("cannot create socket directory " + dir + ": " + errno_text());
        if (::lstat(dir.c_str(), &st) != 0) throw std::runtime_error("socket directory " + dir + ": " + errno_text());
    }
    if (!S_ISDIR(st.st_mode))
        throw std::runtime_error("socket directory " + dir + " is not a directory (or is a symlink)");
    if (st.st_uid != 0)
        throw std::runtime_error("socket directory " + dir + " is owned by uid " + std::to_string(st.st_uid) +
                                 ", not root: use a root-owned directory such as /run/rdmanet");
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        throw std::runtime_error("socket directory " + dir +
                                 " is writable by group or others (e.g. /tmp): anyone could replace the socket; "
                                 "use a root-owned directory such as /run/rdmanet");
}

UnixHttpServer::UnixHttpServer(UnixServerOptions options, HttpHandler handler)
    : options_(std::move(options)), handler_(std::move(handler)) {
    if (options_.threads == 0) options_.threads = 1;
    prepare_socket_directory(options_.socket_path);
    const std::string& path = options_.socket_path;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            throw std::runtime_error("--socket " + path +
                                     " exists and is not a socket: remove it or choose another path");
        ::unlink(path.c_str());  // a stale socket of a previous run
    }
    listener_ = base::UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!listener_) throw std::runtime_error("unix socket: " + errno_text());
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    // The socket file is created 0600 from the start (umask), not chmod'ed after a window.
    const mode_t old_umask = ::umask(0177);
    const int rc = ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    const int bind_errno = errno;
    ::umask(old_umask);
    if (rc != 0) throw std::runtime_error("cannot bind " + path + ": " + std::strerror(bind_errno));
    if (::chmod(path.c_str(), 0600) != 0 || ::listen(listener_.get(), 64) != 0) {
        const std::string why = errno_text();
        ::unlink(path.c_str());
        throw std::runtime_error("cannot listen on " + path + ": " + why);
    }
}

UnixHttpServer::~UnixHttpServer() { stop(); }

void UnixHttpServer::start() {
    for (unsigned i = 0; i < options_.threads; ++i) workers_.emplace_back([this] { worker(); });
}

void UnixHttpServer::stop() {
    stopping_ = true;
    for (auto& t : workers_)
        if (t.joinable()) t.join();
    workers_.clear();
    if (listener_) {
        listener_.reset();
        ::unlink(options_.socket_path.c_str());
    }
}

void UnixHttpServer::worker() {
    while (!stopping_) {
        pollfd p{listener_.get(), POLLIN, 0};
        const int ready = ::poll(&p, 1, 200);
        if (ready <= 0) continue;
        const base::UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
        if (!client) continue;  // another worker took it, or the client is gone
        try {
            serve(client.get());
        } catch (const std::exception& e) {
            // A handler's bug must cost one answer, never the server.
            spdlog::error("dranet-provider: request failed: {}", e.what());
            send_all(client.get(), format_response(500, "application/json", error_body(e.what())));
        }
    }
}

void UnixHttpServer::serve(int client) const {
    RequestParser parser(options_.limits);
    const auto deadline = std::chrono::steady_clock::now() + options_.read_timeout;
    char buf[16384];
    while (parser.state() == RequestParser::State::head || parser.state() == RequestParser::State::body) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || stopping_) {
            send_all(client, format_response(408, "application/json",
                                             error_body("the request did not arrive within " +
                                                        std::to_string(options_.read_timeout.count()) + " ms")));
            return;
        }
        pollfd p{client, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 200)));
        if (ready < 0 && errno != EINTR) return;
        if (ready <= 0) continue;
        const ssize_t n = ::recv(client, buf, sizeof buf, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) return;  // the client gave up: nobody to answer
        parser.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
    if (parser.state() == RequestParser::State::failed) {
        send_all(client,
                 format_response(parser.error_status(), "application/json", error_body(parser.error_message())));
        drain(client);
        return;
    }
    const HttpResponse r = handler_(parser.request());
    send_all(client, format_response(r.status, r.content_type, r.body));
}

}  // namespace rdmanet::cni::node
