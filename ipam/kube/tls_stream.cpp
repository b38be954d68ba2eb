// Socket + OpenSSL connection: see tls_stream.hpp.
#include "tls_stream.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nss.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "rdmanet/base/sigpipe_guard.hpp"
#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::ipam::kube {

namespace {

// CA bundles of the distributions the plugin runs on, tried when the kubeconfig names no CA
// (OpenSSL's compiled-in default directory is Debian's and may not exist on the host).
constexpr const char* kSystemCaBundles[] = {
    "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu
    "/etc/pki/tls/certs/ca-bundle.crt",                   // RHEL, Rocky, Fedora
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL 8+
    "/etc/ssl/ca-bundle.pem",                             // SUSE
};

void init_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        // The host's openssl.cnf belongs to the host's OpenSSL (another version, maybe naming
        // providers this build does not have): not read.
        OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
        // The binaries are linked statically: only the resolvers built into this libc are usable,
        // a module of the host's nsswitch.conf (a shared library of the host's glibc) is not.
        __nss_configure_lookup("hosts", "files dns");
    });
}

std::string openssl_errors() {
    std::string out;
    while (unsigned long e = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        if (!out.empty()) out += "; ";
        out += buf;
    }
    return out.empty() ? "no detail from OpenSSL" : out;
}

struct BioFree {
    void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

BioPtr memory_bio(const std::string& pem) { return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

void add_cas(SSL_CTX* ctx, const KubeConfig& config) {
    BioPtr bio = memory_bio(config.ca_pem);
    STACK_OF(X509_INFO)* infos = PEM_X509_INFO_read_bio(bio.get(), nullptr, nullptr, nullptr);
    int added = 0;
    if (infos) {
        X509_STORE* store = SSL_CTX_get_cert_store(ctx);
        for (int i = 0; i < sk_X509_INFO_num(infos); ++i) {
            X509_INFO* info = sk_X509_INFO_value(infos, i);
            if (info->x509 && X509_STORE_add_cert(store, info->x509) == 1) ++added;
        }
        sk_X509_INFO_pop_free(infos, X509_INFO_free);
    }
    ERR_clear_error();
    if (added == 0) config_error(config.source + ": the certificate authority holds no PEM certificate");
}

void add_client_certificate(SSL_CTX* ctx, const KubeConfig& config) {
    BioPtr certs = memory_bio(config.client_cert_pem);
    X509* leaf = PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr);
    if (!leaf || SSL_CTX_use_certificate(ctx, leaf) != 1) {
        X509_free(leaf);
        config_error(config.source + ": the client certificate is not a PEM certificate (" + openssl_errors() + ")");
    }
    X509_free(leaf);
    while (X509* chain = PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr)) {
        if (SSL_CTX_add0_chain_cert(ctx, chain) != 1) X509_free(chain);
    }
    ERR_clear_error();
    BioPtr key_bio = memory_bio(config.client_key_pem);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
    const bool ok = key && SSL_CTX_use_PrivateKey(ctx, key) == 1 && SSL_CTX_check_private_key(ctx) == 1;
    EVP_PKEY_free(key);
    if (!ok) {
        config_error(config.source + ": the client key is not a PEM private key matching the client certificate (" +
                     openssl_errors() + ")");
    }
}

TransportError failure(TransportFailure kind, const std::string& what) {
    const bool retry = kind != TransportFailure::tls_verification && kind != TransportFailure::protocol;
    return TransportError(kind, retry, kind == TransportFailure::tls_verification, what);
}

}  // namespace

TlsContext::TlsContext(const KubeConfig& config) {
    init_once();
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (!ctx_) throw IpamError(codes::io_failure, "cannot create a TLS context: " + openssl_errors());
    try {
        SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
        verify_ = !config.insecure_skip_tls_verify;
        SSL_CTX_set_verify(ctx_, verify_ ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
        if (verify_) {
            if (!config.ca_pem.empty()) {
                add_cas(ctx_, config);
            } else {
                for (const char* bundle : kSystemCaBundles) {
                    if (::access(bundle, R_OK) == 0) SSL_CTX_load_verify_locations(ctx_, bundle, nullptr);
                }
                ERR_clear_error();
            }
        }
        if (!config.client_cert_pem.empty()) add_client_certificate(ctx_, config);
    } catch (...) {
        SSL_CTX_free(ctx_);
        throw;
    }
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

void Connection::wait(short events, Clock::time_point deadline, std::string_view doing) {
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) throw failure(TransportFailure::timeout, "timed out " + std::string(doing));
        pollfd p{fd_, events, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 60'000)));
        if (n > 0) return;
        if (n < 0 && errno != EINTR)
            throw failure(TransportFailure::receive, "poll: " + std::string(std::strerror(errno)));
    }
}

Connection::Connection(const ServerUrl& url, const TlsContext* tls, Clock::time_point connect_deadline,
                       Clock::time_point deadline) {
    init_once();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (url.host_is_ip ? AI_NUMERICHOST : 0);
    addrinfo* found = nullptr;
    if (const int rc = ::getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &found); rc != 0) {
        throw failure(TransportFailure::resolve, "cannot resolve " + url.host + ": " + ::gai_strerror(rc));
    }
    std::string last = "no address";
    for (addrinfo* a = found; a && fd_ < 0; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            last = std::strerror(errno);
            continue;
        }
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fd_ = fd;
        try {
            if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
                if (errno != EINPROGRESS) throw failure(TransportFailure::connect, std::strerror(errno));
                wait(POLLOUT, connect_deadline, "connecting to " + url.host_header());
                int err = 0;
                socklen_t len = sizeof err;
                ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err != 0) throw failure(TransportFailure::connect, std::strerror(err));
            }
        } catch (const TransportError& e) {
            ::close(fd);
            fd_ = -1;
            last = e.what();
            if (e.kind == TransportFailure::timeout) {
                ::freeaddrinfo(found);
                throw;
            }
        }
    }
    ::freeaddrinfo(found);
    if (fd_ < 0) throw failure(TransportFailure::connect, "cannot connect to " + url.host_header() + ": " + last);
    if (!tls) return;
    try {
        ssl_ = SSL_new(tls->get());
        if (!ssl_ || SSL_set_fd(ssl_, fd_) != 1) throw failure(TransportFailure::tls_handshake, openssl_errors());
        if (!url.host_is_ip) SSL_set_tlsext_host_name(ssl_, url.host.c_str());
        if (tls->verify()) {
            const int ok = url.host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), url.host.c_str())
                                          : SSL_set1_host(ssl_, url.host.c_str());
            if (ok != 1)
                throw failure(TransportFailure::tls_handshake, "cannot set the expected host: " + openssl_errors());
        }
        const base::SigpipeGuard no_sigpipe;
        for (;;) {
            ERR_clear_error();
            errno = 0;
            const int rc = SSL_connect(ssl_);
            if (rc == 1) break;
            const int err = SSL_get_error(ssl_, rc);
            if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
                wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline,
                     "in the TLS handshake with " + url.host_header());
                continue;
            }
            const long verify = SSL_get_verify_result(ssl_);
            if (verify != X509_V_OK) {
                throw failure(TransportFailure::tls_verification,
                              "SSL certificate problem: " + std::string(X509_verify_cert_error_string(verify)));
            }
            const std::string detail = err == SSL_ERROR_SYSCALL && errno != 0 ? std::strerror(errno) : openssl_errors();
            throw failure(TransportFailure::tls_handshake,
                          "TLS handshake with " + url.host_header() + " failed: " + detail);
        }
    } catch (...) {
        if (ssl_) SSL_free(ssl_);
        ssl_ = nullptr;
        ::close(fd_);
        fd_ = -1;
        throw;
    }
}

Connection::~Connection() {
    if (ssl_) {
        const base::SigpipeGuard no_sigpipe;
        SSL_shutdown(ssl_);  // close_notify without waiting for the peer's (non-blocking)
        SSL_free(ssl_);
    }
    if (fd_ >= 0) ::close(fd_);
}

void Connection::write_all(std::string_view data, Clock::time_point deadline) {
    const base::SigpipeGuard no_sigpipe;
    while (!data.empty()) {
        if (ssl_) {
            ERR_clear_error();
            errno = 0;
            const int rc = SSL_write(ssl_, data.data(), static_cast<int>(std::min<std::size_t>(data.size(), 1 << 30)));
            if (rc > 0) {
                data.remove_prefix(static_cast<std::size_t>(rc));
                continue;
            }
            const int err = SSL_get_error(ssl_, rc);
            if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
                wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, "sending the request");
                continue;
            }
            throw failure(
                TransportFailure::send,
                "sending the request failed: " +
                    (err == SSL_ERROR_SYSCALL && errno ? std::string(std::strerror(errno)) : openssl_errors()));
        }
        const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(static_cast<std::size_t>(n));
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            wait(POLLOUT, deadline, "sending the request");
        } else {
            throw failure(TransportFailure::send, "sending the request failed: " + std::string(std::strerror(errno)));
        }
    }
}

std::size_t Connection::read_some(char* buf, std::size_t size, Clock::time_point deadline) {
    const base::SigpipeGuard no_sigpipe;  // TLS may write while reading (alerts, key updates)
    for (;;) {
        if (ssl_) {
            ERR_clear_error();
            errno = 0;
            const int rc = SSL_read(ssl_, buf, static_cast<int>(std::min<std::size_t>(size, 1 << 30)));
            if (rc > 0) return static_cast<std::size_t>(rc);
            const int err = SSL_get_error(ssl_, rc);
            if (err == SSL_ERROR_ZERO_RETURN) return 0;
            if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
                wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, "waiting for the answer");
                continue;
            }
            if (err == SSL_ERROR_SYSCALL && errno == 0) return 0;  // closed without close_notify
            throw failure(TransportFailure::receive,
                          "receiving the answer failed: " +
                              (err == SSL_ERROR_SYSCALL ? std::string(std::strerror(errno)) : openssl_errors()));
        }
        const ssize_t n = ::recv(fd_, buf, size, 0);
        if (n >= 0) return static_cast<std::size_t>(n);
        if (errno == EAGAIN || errno == EINTR) {
            wait(POLLIN, deadline, "waiting for the answer");
            continue;
        }
        throw failure(TransportFailure::receive, "receiving the answer failed: " + std::string(std::strerror(errno)));
    }
}

bool Connection::reusable() const {
    if (ssl_ && SSL_pending(ssl_) > 0) return false;  // unread bytes: out of step with the server
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;  // readable while idle = closed (or garbage): do not reuse
}

}  // namespace rdmanet::ipam::kube
