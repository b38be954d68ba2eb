#pragma once
// One HTTPS connection to the Kubernetes API, reused for every request of an invocation (TLS
// handshake once, then HTTP/1.1 keep-alive). No retries here: see api.hpp.
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "rdmanet/ipam/kube/http_wire.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"

namespace rdmanet::ipam::kube {

struct HttpResponse {
    long status = 0;
    std::string body;
    std::optional<std::chrono::milliseconds> retry_after;
};

// Per-request variations of what is asked and kept.
struct RequestOptions {
    std::string_view accept;                // "" = application/json
    bool discard_success_body = false;      // a 2xx answer's body is read and dropped, not stored
    std::size_t max_body = kMaxObjectBody;  // one object; a LIST passes kMaxListBody (http_wire.hpp)
};

enum class TransportFailure { resolve, connect, timeout, tls_handshake, tls_verification, send, receive, protocol };

// The request did not produce an HTTP response (connect, TLS, send/receive, timeout).
struct TransportError : std::runtime_error {
    TransportFailure kind;
    bool retryable;         // worth another attempt (refused, reset, dropped, timed out)
    bool tls_verification;  // the server's certificate was not trusted
    TransportError(TransportFailure k, bool retry, bool tls, const std::string& what)
        : std::runtime_error(what), kind(k), retryable(retry), tls_verification(tls) {}
};

class HttpClient {
public:
    // Throws IpamError(invalid_config) for a configuration it refuses (a token over plain http).
    explicit HttpClient(const KubeConfig& config);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // `path` starts with '/'. `timeout` bounds the whole request including connecting.
    HttpResponse send(std::string_view method, const std::string& path, const std::string& body,
                      std::string_view content_type, std::chrono::milliseconds timeout,
                      const RequestOptions& options = {});

    // New connections opened so far (1 when every request reused the first one).
    long connections() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace rdmanet::ipam::kube
