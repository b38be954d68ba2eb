// The server a shared test case runs against: see server_under_test.hpp.
#include "server_under_test.hpp"

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

namespace apiserver_test {

ServerUnderTest::ServerUnderTest(ServerOptions options) {
    if (!real_server_selected()) {
        in_repo_ = std::make_unique<TestApiServer>(std::move(options));
        server_ = in_repo_.get();
        dir_ = in_repo_->dir();
        return;
    }
    if (options.token != ServerOptions{}.token)
        throw std::logic_error("the server's token is an in-repo switch: tag the test [inrepo]");
    if (options.crds) {
        RealApiServer& shared = RealApiServer::shared();
        shared.reset();
        real_ = &shared;
    } else {
        // A second server of the process, without the CRDs (nothing a test can write there
        // persists: the whereabouts group is not served), kept for the others that need one.
        static std::unique_ptr<RealApiServer> without_crds;
        if (!without_crds) without_crds = std::make_unique<RealApiServer>(RealServerOptions{.crds = false});
        without_crds->reset();
        real_ = without_crds.get();
    }
    server_ = real_;
    // Each test case its own directory (kubeconfigs, node journals, policy) inside the server's.
    std::string tmpl = real_->dir() + "/case-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
}

ServerUnderTest::~ServerUnderTest() {
    if (real_) {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
}

json ServerUnderTest::stats() const {
    if (in_repo_) return in_repo_->stats();
    json by_method = json::object();
    long total = 0;
    for (const auto& [method, n] : real_->request_counts()) {
        by_method[method] = n;
        total += n;
    }
    return {{"requests", total}, {"by_method", by_method}};
}

}  // namespace apiserver_test
