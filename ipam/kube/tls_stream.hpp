#pragma once
// One TCP connection to the API server, TLS or plain, with every wait bounded by a deadline
// (non-blocking socket + poll). OpenSSL is linked in (static archives), so the plugin binaries
// need nothing from the host but the kernel: no libcurl/libssl of the node's own version.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "rdmanet/ipam/kube/http.hpp"
#include "rdmanet/ipam/kube/http_wire.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace rdmanet::ipam::kube {

using Clock = std::chrono::steady_clock;

// The TLS settings of one kubeconfig: trusted CAs (the kubeconfig's, else the system's), the
// client certificate, verification on unless insecure-skip-tls-verify. Throws
// IpamError(invalid_config) naming the source for unusable PEM.
class TlsContext {
public:
    explicit TlsContext(const KubeConfig& config);
    ~TlsContext();
    TlsContext(const TlsContext&) = delete;
    TlsContext& operator=(const TlsContext&) = delete;
    SSL_CTX* get() const { return ctx_; }
    bool verify() const { return verify_; }

private:
    SSL_CTX* ctx_ = nullptr;
    bool verify_ = true;
};

class Connection {
public:
    // Resolves, connects (bounded by `connect_deadline`) and, with `tls`, handshakes and checks the
    // certificate against the URL's host name or IP (bounded by `deadline`). Throws TransportError.
    Connection(const ServerUrl& url, const TlsContext* tls, Clock::time_point connect_deadline,
               Clock::time_point deadline);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    void write_all(std::string_view data, Clock::time_point deadline);
    // Some bytes into `buf`; 0 when the server closed the connection.
    std::size_t read_some(char* buf, std::size_t size, Clock::time_point deadline);
    // A kept-alive connection the server has not closed (nothing readable while idle).
    bool reusable() const;

private:
    void wait(short events, Clock::time_point deadline, std::string_view doing);
    int fd_ = -1;
    SSL* ssl_ = nullptr;
};

}  // namespace rdmanet::ipam::kube
