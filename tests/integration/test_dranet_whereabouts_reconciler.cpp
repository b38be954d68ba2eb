// whereabouts' own ip-reconciler (the peer built from github.com/k8snetworkplumbingwg/whereabouts,
// RDMANET_PEER_WHEREABOUTS) over an IPPool holding a DRA claim's entry: it releases it, which is
// why rdmanetctl dranet-provider refuses such profiles unless the admin states that no whereabouts
// reconciler runs. Hidden from the integration list; its own ctest entry runs it (exit 77 =
// skipped when the peer is missing outside CI).
//
// The reconciler reads its schedule from /cron-schedule/config and its API access from the
// in-cluster service-account files, both at fixed paths: it runs chrooted into an overlay of the
// host's root in a private mount namespace, so those files exist only there.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "dranet_client.hpp"
#include "support/process.hpp"
#include "test_kube_util.hpp"

using namespace kube_test;
using dranet_test::Device;
using dranet_test::kNoWhereaboutsReconciler;
using dranet_test::ProviderProcess;

namespace {

// The peer's directory, or the rule for a missing one: fail in CI, skip (77) elsewhere.
std::string whereabouts_peer() {
    const char* dir = std::getenv("RDMANET_PEER_WHEREABOUTS");
    if (dir && *dir) return dir;
    if (std::getenv("CI")) FAIL("RDMANET_PEER_WHEREABOUTS is not set: build the whereabouts peer (tests/peers)");
    std::cout << "SKIPPED: RDMANET_PEER_WHEREABOUTS is not set (the whereabouts peer is not built)\n";
    std::exit(77);
}

// whereabouts' ip-reconciler, every minute, against `server`, until destroyed.
class Reconciler {
public:
    Reconciler(const std::string& binary, const ApiServer& server, const std::string& dir) : dir_(dir) {
        const std::string url = server.url();  // https://127.0.0.1:PORT
        const std::string port = url.substr(url.rfind(':') + 1);
        std::ofstream(dir + "/token") << server.token();
        const std::string script = dir + "/reconciler.sh";
        std::ofstream(script) << "set -e\n"
                              << "mount --make-rprivate /\n"
                              << "O=" << dir << "/ov\n"
                              << "mkdir -p $O && mount -t tmpfs tmpfs $O && mkdir $O/up $O/work $O/root\n"
                              << "mount -t overlay overlay -o lowerdir=/,upperdir=$O/up,workdir=$O/work $O/root\n"
                              << "S=$O/root/run/secrets/kubernetes.io/serviceaccount\n"
                              << "mkdir -p $O/root/cron-schedule $S\n"
                              << "echo '* * * * *' > $O/root/cron-schedule/config\n"
                              << "cp " << dir << "/token $S/token\n"
                              << "cp " << server.ca_file() << " $S/ca.crt\n"
                              << "printf kube-system > $S/namespace\n"
                              << "mount --bind /proc $O/root/proc\n"
                              << "exec chroot $O/root env KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="
                              << port << " " << binary << " -log-level debug\n";
        log_ = dir + "/reconciler.log";
        pid_ = ::fork();
        if (pid_ == 0) {
            const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            ::execlp("unshare", "unshare", "-m", "sh", script.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
    }
    ~Reconciler() {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            int status = 0;
            ::waitpid(pid_, &status, 0);
        }
    }
    Reconciler(const Reconciler&) = delete;
    Reconciler& operator=(const Reconciler&) = delete;
    std::string log() const {
        std::ifstream in(log_);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }

private:
    std::string dir_, log_;
    pid_t pid_ = -1;
};

}  // namespace

TEST_CASE("whereabouts' ip-reconciler releases a DRA claim's entry in an IPPool (why the provider refuses it)",
          "[.][whereabouts-peer]") {
    const std::string peer = whereabouts_peer();
    ServerUnderTest server;
    Env env(server);
    ProviderProcess p("wbpeer");
    p.extra_env = env.env();
    json ipam = env.profile_ipam("10.46.0.0/24");
    // Without the statement the provider refuses the profile; with it (a wrong statement here)
    // the claim gets its entry, and whereabouts' reconciler shows what the refusal prevents.
    p.write_profile("rail", {{"network", "kubenet"}, {"ipam", ipam}, {"policyRouting", true}});
    p.start();
    const std::string claim = "5a4b3c2d-0000-4000-8000-0000000000b1";
    const auto request = dranet_test::profile_request(Device{"pci-0000-3b-00-1", "", ""}, claim, "rail");
    const auto refused = dranet_test::http(p.socket(), "POST", "/GetProfileConfig", request);
    CHECK(refused.status == 400);
    CHECK_THAT(refused.body, Catch::Contains("ip-reconciler"));
    CHECK(allocations(server, "10.46.0.0-24").empty());

    p.write_profile("rail",
                    {{"network", "kubenet"}, {"ipam", ipam}, {"policyRouting", true}, kNoWhereaboutsReconciler});
    const auto held = dranet_test::http(p.socket(), "POST", "/GetProfileConfig", request);
    INFO(held.body << p.log());
    REQUIRE(held.status == 200);
    REQUIRE(allocations(server, "10.46.0.0-24").size() == 1);
    // rdmanet's own reconciler keeps it (a podref without '/' names no pod to look up).
    const auto kept = env.ctl({"reconcile", "--kubeconfig", env.kubeconfig});
    INFO(kept.out << kept.err);
    CHECK(allocations(server, "10.46.0.0-24").size() == 1);

    // whereabouts' reconciler: its first run starts at the next full minute.
    Reconciler reconciler(peer + "/ip-reconciler", server, p.dir());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (!allocations(server, "10.46.0.0-24").empty() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::seconds(1));
    INFO(reconciler.log());
    CHECK(allocations(server, "10.46.0.0-24").empty());
    CHECK_THAT(reconciler.log(), Catch::Contains("dranet:" + claim));
}
