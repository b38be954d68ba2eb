#pragma once
// HTTP/1.1 as the Kubernetes client speaks it, without I/O: the server URL, the request's bytes,
// and a response parser fed whatever the connection delivered. Pure, so every framing case
// (Content-Length, chunked, read-until-close, 1xx, a lost answer) is unit-tested without a socket.
#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rdmanet::ipam::kube {

// "https://host:port/prefix" split up. Throws std::invalid_argument naming what is wrong.
struct ServerUrl {
    bool tls = true;
    std::string host;                 // without the brackets of an IPv6 literal
    std::string port;                 // "443" / "80" when the URL has none
    std::string path_prefix;          // "" or "/k8s/clusters/c-1" (no trailing slash)
    bool host_is_ip = false;          // certificate checked against an IP SAN, no SNI
    std::string host_header() const;  // "host[:port]" as the Host header wants it
};
ServerUrl parse_server_url(std::string_view url);

// Whether `value` can go into a header line as it is: no control character (CR and LF would end
// the header and start another one: header injection), no DEL. Checked where a value is read
// (kubeconfig, token files), with an error naming its source, and again when a request is built.
bool header_value_safe(std::string_view value);

// The request line, headers and body. `headers` are complete "Name: value" lines without CRLF.
std::string format_request(std::string_view method, std::string_view target, const std::vector<std::string>& headers,
                           std::string_view body, bool with_body);

// Bounds on what one answer may hold, enforced while it is read (an answer past them is refused
// with ProtocolError, never buffered): etcd refuses a request larger than 1.5 MiB (its default
// --max-request-bytes, which the kube-apiserver inherits as its object limit), so one object as
// the API server answers it (JSON of what etcd stores, a Status) is below 4 MiB with room for
// re-encoding; a list holds many objects. Headers are not bodies: 64 KiB a line, 1 MiB in all.
inline constexpr std::size_t kMaxObjectBody = 4u << 20;
inline constexpr std::size_t kMaxListBody = 256u << 20;
inline constexpr std::size_t kMaxHeaderBytes = 1u << 20;

struct ParsedResponse {
    long status = 0;
    std::string body;
    std::optional<std::chrono::milliseconds> retry_after;
    bool keep_alive = true;  // the connection can carry the next request
};

// The response is not HTTP/1.x or its framing is broken.
struct ProtocolError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class ResponseParser {
public:
    // `discard_success_body`: a 2xx answer's body is read (to keep the connection usable) and dropped.
    // `max_body`: a body (kept or dropped) longer than this is a ProtocolError naming the limit.
    explicit ResponseParser(bool discard_success_body = false, std::size_t max_body = kMaxObjectBody)
        : discard_success_(discard_success_body), max_body_(max_body) {}

    // Takes bytes in order; returns how many it used (fewer than given only once done()).
    std::size_t feed(std::string_view data);
    // The connection closed: completes a body delimited by the close, else throws ProtocolError.
    void end_of_stream();
    bool done() const { return state_ == State::done; }
    bool started() const { return started_; }  // any byte of the answer arrived
    ParsedResponse take() { return std::move(response_); }

private:
    enum class State {
        status_line,
        headers,
        body_length,
        chunk_size,
        chunk_data,
        chunk_end,
        trailers,
        body_close,
        done
    };
    void line(std::string_view text);
    void header_line(std::string_view text);
    void headers_done();
    void append_body(std::string_view data);

    State state_ = State::status_line;
    bool discard_success_;
    std::size_t max_body_;
    unsigned long long body_bytes_ = 0;  // of the current answer, kept or dropped
    std::size_t header_bytes_ = 0;       // status and header lines of the current answer
    bool keep_body_ = true;
    bool started_ = false;
    bool http10_ = false;
    bool chunked_ = false;
    std::optional<unsigned long long> content_length_;
    unsigned long long remaining_ = 0;
    std::string pending_;  // a line not yet complete
    ParsedResponse response_;
};

}  // namespace rdmanet::ipam::kube
