#pragma once
// The client's side of the node's unix-socket HTTP (unix_http_server.hpp): one request per
// connection, written as Go's net/http writes it to a unix socket (Host: localhost, Content-Length,
// JSON body: DRANET's webhook client), the answer read with the Kubernetes client's response
// parser (ipam/kube/http_wire.hpp). The node agent's claim GC releases claims through it.
#include <chrono>
#include <string>
#include <string_view>

#include "rdmanet/base/fd.hpp"

namespace rdmanet::cni::node {

struct UnixHttpReply {
    long status = 0;   // 0: no answer (nothing listens, the connection closed, the time ran out)
    std::string body;
    std::string error; // why there is no answer ("" with one)
};

// A connected stream socket to `path` whose reads time out after `timeout`; an empty fd when
// nothing accepts there (errno tells why).
base::UniqueFd connect_unix_socket(const std::string& path, std::chrono::milliseconds timeout);

// Writes all of `data` (stops early when the peer closes: its answer may still be readable).
void send_all(int fd, std::string_view data);

// Reads one answer to its end (or to the connection's close / the socket's read timeout).
UnixHttpReply read_http_reply(int fd);

// One request: connect, write, read; bounded by `timeout` for the connect and each read.
UnixHttpReply unix_http_request(const std::string& socket_path, std::string_view method, std::string_view path,
                                std::string_view body, std::chrono::milliseconds timeout);

}  // namespace rdmanet::cni::node
