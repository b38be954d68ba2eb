#pragma once
// The agent's metrics endpoint: a minimal HTTP/1.0 responder for GET /metrics, served from the
// agent's own loop (no thread). One connection at a time, each bounded by a short read timeout,
// so a stuck scraper delays the next pass by at most that long.
#include <functional>
#include <string>

#include "rdmanet/base/fd.hpp"

namespace rdmanet::cni::node {

class MetricsServer {
public:
    // `address`: "HOST:PORT" with an IPv4 address or "[IPv6]" host ("127.0.0.1:9750",
    // "0.0.0.0:9750"); port 0 picks a free port (see port()). Throws std::runtime_error naming the
    // address when it cannot be parsed or bound.
    explicit MetricsServer(const std::string& address);

    int fd() const { return fd_.get(); }
    int port() const { return port_; }
    // Accepts one pending connection and answers it: GET /metrics -> 200 with body(), anything
    // else -> 404 (or 405 for another method). Never throws for a client's misbehaviour.
    void serve_one(const std::function<std::string()>& body) const;

private:
    base::UniqueFd fd_;
    int port_ = 0;
};

}  // namespace rdmanet::cni::node
