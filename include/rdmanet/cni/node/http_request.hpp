#pragma once
// The server's side of HTTP/1.1 without I/O: a request parser fed whatever the connection
// delivered, with hard bounds on the head and the body, and the bytes of a response. The client's
// side (URLs, requests, response framing) is ipam/kube/http_wire.hpp; this is its counterpart for
// the node's own servers. Only Content-Length bodies: a node-local client (DRANET's Go client,
// curl) sends one for every body it has in memory.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace rdmanet::cni::node {

struct HttpRequest {
    std::string method;                          // "GET", "POST"
    std::string path;                            // the target without its query string
    std::map<std::string, std::string> headers;  // names lower-cased, values trimmed
    std::string body;
};

struct RequestLimits {
    std::size_t max_head = 16 * 1024;
    std::size_t max_body = 1024 * 1024;
};

class RequestParser {
public:
    enum class State { head, body, done, failed };

    explicit RequestParser(RequestLimits limits = {}) : limits_(limits) {}

    // Takes bytes in order (what follows a complete request is ignored: one request per connection).
    void feed(std::string_view data);
    State state() const { return state_; }
    const HttpRequest& request() const { return request_; }
    // When failed(): the status to answer (400, 413, 431, 501, 505) and what to fix.
    int error_status() const { return error_status_; }
    const std::string& error_message() const { return error_message_; }

private:
    void fail(int status, std::string message);
    void parse_head(std::string_view head);

    RequestLimits limits_;
    State state_ = State::head;
    std::string buffer_;
    std::size_t body_length_ = 0;
    HttpRequest request_;
    int error_status_ = 0;
    std::string error_message_;
};

// "HTTP/1.1 <status> <reason>" with Content-Type, Content-Length and Connection: close.
std::string format_response(int status, std::string_view content_type, std::string_view body);
std::string_view reason_phrase(int status);

}  // namespace rdmanet::cni::node
