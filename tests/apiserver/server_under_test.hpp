#pragma once
// The API server a shared Kubernetes datastore test case runs against, chosen per test process:
// the in-repo TestApiServer (default; a fresh one per test case) or, with
// RDMANET_TEST_APISERVER=real, the process's one real kube-apiserver + etcd
// (RealApiServer::shared(), reset to empty at each test case: its IPPools, reservations, node
// slice pools, nv-ipam pools, pods and nodes deleted). Test cases that need what only the in-repo server can do
// (fault injection, outages, freezing) take TestApiServer directly and carry the [inrepo] tag;
// the real-server ctest entries run "~[inrepo]".
#include <map>
#include <memory>
#include <string>

#include "fixture.hpp"
#include "real_apiserver.hpp"

namespace apiserver_test {

class ServerUnderTest : public ApiServer {
public:
    // On the real server only `crds` is honoured (false: the process's second real server, one
    // without the CRDs); extra_args (latency, seed) are the in-repo server's and ignored there, a
    // token of its own is refused.
    explicit ServerUnderTest(ServerOptions options = {});
    ~ServerUnderTest() override;

    std::string url() const override { return server_->url(); }
    std::string ca_file() const override { return server_->ca_file(); }
    const std::string& dir() const override { return dir_; }
    const std::string& token() const override { return server_->token(); }
    std::string forbidden_token() const override { return server_->forbidden_token(); }
    bool is_real() const override { return server_->is_real(); }
    HttpResult request(const std::string& method, const std::string& path, const std::string& body = "",
                       const std::string& content_type = "application/json",
                       const std::string& accept = "") const override {
        return server_->request(method, path, body, content_type, accept);
    }
    void ensure_namespace(const std::string& ns) const override { server_->ensure_namespace(ns); }

    // Requests served so far on whereabouts' and nv-ipam's resources, pods and nodes, by HTTP method, and their
    // total ("requests"), in the shape of the in-repo server's /_test/stats: {"requests":N,
    // "by_method":{"GET":..}}. The real server counts from its /metrics (lists and watches as GET).
    json stats() const;

    TestApiServer* in_repo() const { return in_repo_.get(); }  // nullptr on the real server
    const RealApiServer* real() const { return real_; }        // nullptr on the in-repo server
    // "in-repo" or "real kube-apiserver": for INFO() lines and messages.
    std::string name() const { return is_real() ? "real kube-apiserver" : "in-repo test API server"; }

private:
    std::unique_ptr<TestApiServer> in_repo_;
    const RealApiServer* real_ = nullptr;
    const ApiServer* server_ = nullptr;
    std::string dir_;  // kubeconfigs and IPAM state of this test case (removed with it)
};

}  // namespace apiserver_test
