#pragma once
// An HTTP/1.1 server on a unix socket that only root can reach, for node-local clients (DRANET's
// profile-provider webhook client). A few worker threads accept and answer one request per
// connection; every connection is bounded in time and size, and nothing a client sends ends the
// server.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "rdmanet/base/fd.hpp"
#include "rdmanet/cni/node/http_request.hpp"

namespace rdmanet::cni::node {

struct HttpResponse {
    int status = 200;
    std::string body;
    std::string content_type = "application/json";
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct UnixServerOptions {
    std::string socket_path;
    unsigned threads = 4;
    // A client has this long from its connect to deliver its whole request.
    std::chrono::milliseconds read_timeout{5000};
    RequestLimits limits;
};

// Checks the directory of a socket path and creates it (0700) when missing: the socket's only
// protection besides its own mode 0600 is that nobody but root can replace or pre-create it.
// Throws std::runtime_error naming the path and what to fix when the directory is writable by
// anyone but root, not owned by root, or not a directory.
void prepare_socket_directory(const std::string& socket_path);

class UnixHttpServer {
public:
    // Binds and listens (the socket file mode 0600; a stale socket at the path is replaced, any
    // other file there is refused). Throws std::runtime_error with the path on failure.
    UnixHttpServer(UnixServerOptions options, HttpHandler handler);
    ~UnixHttpServer();  // stop()
    UnixHttpServer(const UnixHttpServer&) = delete;
    UnixHttpServer& operator=(const UnixHttpServer&) = delete;

    void start();  // the worker threads
    void stop();   // ends the workers after their current connection, removes the socket file

private:
    void worker();
    void serve(int client) const;

    UnixServerOptions options_;
    HttpHandler handler_;
    base::UniqueFd listener_;
    std::atomic<bool> stopping_{false};
    std::vector<std::thread> workers_;
};

}  // namespace rdmanet::cni::node
