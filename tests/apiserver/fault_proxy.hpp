#pragma once
// A TLS proxy on 127.0.0.1 in front of an ApiServer (the in-repo test server or a real
// kube-apiserver), for the faults a real server cannot be made to show: it forwards every request
// as it came (method, path and query, body, Authorization, Content-Type, Accept) and the answer
// back (status, body, Content-Type, Retry-After), or - once fail_all() is set - answers every
// request itself with that status and a kube-apiserver Status body, sending nothing on. It counts
// the requests it received either way. Its own test CA and serving certificate (IP SAN
// 127.0.0.1) live in the upstream's private directory; write_kubeconfig() points a client at it.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "fixture.hpp"

namespace httplib {
class SSLServer;
}

namespace apiserver_test {

class FaultProxy {
public:
    explicit FaultProxy(const ApiServer& upstream);  // throws when it cannot listen
    ~FaultProxy();
    FaultProxy(const FaultProxy&) = delete;
    FaultProxy& operator=(const FaultProxy&) = delete;

    std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
    std::string ca_file() const;
    // upstream.write_kubeconfig(name, options) with the proxy's URL and CA instead of the server's.
    std::string write_kubeconfig(const std::string& name, KubeconfigOptions options = {}) const;

    // 0: forward (the default); else answer every request with `status` (500: InternalError).
    void fail_all(int status) { fail_status_ = status; }
    // Requests received so far (forwarded or answered).
    std::uint64_t requests() const { return requests_; }

private:
    const ApiServer& upstream_;
    int upstream_port_ = 0;
    int port_ = 0;
    std::unique_ptr<httplib::SSLServer> server_;
    std::thread thread_;
    std::atomic<int> fail_status_{0};
    std::atomic<std::uint64_t> requests_{0};
};

}  // namespace apiserver_test
