// bin/dranet_bench: rdmanetctl dranet-provider as DRANET drives it, 200 claims each answered
// (GetProfileConfig) and released (ReleaseProfileConfig) over the unix socket, on the local store;
// beside it the same 200 allocations through bin/rdmanet-ipam (ADD + DEL, one process each, as a
// CNI plugin execs it). Prints p50/p99 in milliseconds. The local store makes no API request (0
// per claim); Kubernetes datastores are measured by kube_bench / kube_slice_bench.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "integration/dranet_client.hpp"

namespace rdmanet::test {
std::string bin_dir() { return RDMANET_BIN_DIR; }
}  // namespace rdmanet::test

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

void report(const std::string& what, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))]; };
    std::printf("%-44s n=%zu  p50 %7.3f ms  p99 %7.3f ms\n", what.c_str(), v.size(), at(0.50), at(0.99));
}

// rdmanet-ipam as a CNI plugin runs it: config on stdin, CNI_* in the environment.
int run_ipam(const std::string& command, const std::string& id, const std::string& conf) {
    int in[2];
    if (::pipe(in) != 0) return -1;
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(in[0], 0);
        ::close(in[1]);
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        ::dup2(null, 2);
        ::setenv("CNI_COMMAND", command.c_str(), 1);
        ::setenv("CNI_CONTAINERID", id.c_str(), 1);
        ::setenv("CNI_NETNS", "/var/run/netns/unused", 1);
        ::setenv("CNI_IFNAME", "net1", 1);
        ::setenv("CNI_PATH", RDMANET_BIN_DIR, 1);
        ::setenv("CNI_ARGS", ("IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=" + id).c_str(), 1);
        const std::string path = std::string(RDMANET_BIN_DIR) + "/rdmanet-ipam";
        ::execl(path.c_str(), path.c_str(), nullptr);
        ::_exit(127);
    }
    ::close(in[0]);
    [[maybe_unused]] auto w = ::write(in[1], conf.data(), conf.size());
    ::close(in[1]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int main() {
    constexpr int kClaims = 200;
    dranet_test::ProviderProcess p("bench");
    // The node policy's defaults keep data_dir under /var/lib/cni/rdmanet: allow the temp dir.
    const std::string policy = p.dir() + "/policy.json";
    std::ofstream(policy) << json{{"ipamDataDirs", {p.dir()}}, {"logDir", p.dir()}}.dump();
    ::setenv("RDMANET_POLICY_FILE", policy.c_str(), 1);
    p.write_profile("rail", {{"ipam", {{"range", "10.90.0.0/16"}, {"gateway", "10.90.0.1"}, {"data_dir", p.data_dir()}}},
                             {"policyRouting", true}});
    p.start();

    std::vector<double> get_ms, release_ms;
    for (int i = 0; i < kClaims; ++i) {
        const std::string req =
            dranet_test::profile_request({"eth1", "", ""}, "bench-claim-" + std::to_string(i), "rail");
        auto t0 = Clock::now();
        const auto g = dranet_test::http(p.socket(), "POST", "/GetProfileConfig", req);
        get_ms.push_back(ms_since(t0));
        t0 = Clock::now();
        const auto r = dranet_test::http(p.socket(), "POST", "/ReleaseProfileConfig", req);
        release_ms.push_back(ms_since(t0));
        if (g.status != 200 || r.status != 200) {
            std::cerr << "claim " << i << ": " << g.status << " " << g.body << " / " << r.status << " " << r.body << '\n';
            return 1;
        }
    }
    report("dranet-provider GetProfileConfig", get_ms);
    report("dranet-provider ReleaseProfileConfig", release_ms);

    const std::string conf = json{{"cniVersion", "1.0.0"}, {"name", "benchnet"}, {"type", "macvlan"},
                                  {"ipam", {{"type", "rdmanet-ipam"}, {"range", "10.91.0.0/16"},
                                            {"gateway", "10.91.0.1"}, {"data_dir", p.data_dir()}}}}
                                 .dump();
    std::vector<double> add_ms, del_ms;
    for (int i = 0; i < kClaims; ++i) {
        const std::string id = "bench-ctr-" + std::to_string(i);
        auto t0 = Clock::now();
        const int a = run_ipam("ADD", id, conf);
        add_ms.push_back(ms_since(t0));
        t0 = Clock::now();
        const int d = run_ipam("DEL", id, conf);
        del_ms.push_back(ms_since(t0));
        if (a != 0 || d != 0) {
            std::cerr << "rdmanet-ipam " << id << ": ADD " << a << ", DEL " << d << '\n';
            return 1;
        }
    }
    report("rdmanet-ipam ADD (process)", add_ms);
    report("rdmanet-ipam DEL (process)", del_ms);
    std::printf("API requests per claim: 0 (local store)\n");
    return 0;
}
