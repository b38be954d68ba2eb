// bin/dranet_bench: rdmanetctl dranet-provider as DRANET drives it, 200 claims each answered
// (GetProfileConfig) and released (ReleaseProfileConfig) over the unix socket; beside it the same
// 200 allocations through bin/rdmanet-ipam (ADD + DEL, one process each, as a CNI plugin execs it).
// Datastores: the local store, then on bin/test_apiserver (2 ms added latency per API request)
// whereabouts IPPools, node slices (node_slice_size) and an nv-ipam CIDRPool. The provider serves
// the Kubernetes profiles through its own --kubeconfig (the profiles name none); rdmanet-ipam's
// configs name the same kubeconfig. Prints p50/p99 in milliseconds and the API requests per claim
// (GetProfileConfig + ReleaseProfileConfig, or ADD + DEL) as the server counted them, after one
// warm-up claim per datastore that stays held (the node's slice or block is then known: the
// steady state of a node that has served a claim before).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>

#include "apiserver/fixture.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"
#include "rdmanet/ipam/kube/slice_store.hpp"
#include "integration/dranet_client.hpp"
#include "support/build_paths.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int kClaims = 200;
constexpr int kLatencyMs = 2;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

void report(const std::string& what, std::vector<double> v, const std::string& requests) {
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))]; };
    std::printf("%-52s n=%zu  p50 %8.3f ms  p99 %8.3f ms  %s\n", what.c_str(), v.size(), at(0.50), at(0.99),
                requests.c_str());
}

// rdmanet-ipam as a CNI plugin runs it: config on stdin, CNI_* (and NODENAME) in the environment.
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
        ::setenv("CNI_PATH", rdmanet::test::bin_dir().c_str(), 1);
        ::setenv("CNI_ARGS", ("IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=" + id).c_str(), 1);
        ::setenv("NODENAME", "node-1", 1);  // the provider's --node-name
        const std::string path = rdmanet::test::bin_dir() + "/rdmanet-ipam";
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

// The provider leaves node-slice publication to the node agent: its passes (publish_pending, the
// agent's own entry point and budget per pass) until the backlog is empty, with their API requests,
// so that the next row starts, as on a node, with the provider's changes published.
bool agent_publishes(const std::string& kubeconfig, const std::string& data_dir,
                     const apiserver_test::TestApiServer& server) {
    const auto before = server.stats()["requests"].get<std::uint64_t>();
    const auto kube = rdmanet::ipam::kube::load_kubeconfig(kubeconfig);
    int passes = 0, published = 0;
    for (; passes < 100; ++passes) {
        const auto r = rdmanet::ipam::kube::publish_pending(kube, data_dir, rdmanet::ipam::kube::kPublishBudget);
        published += r.published;
        if (r.remaining == 0 && r.error.empty()) break;
    }
    const auto requests = server.stats()["requests"].get<std::uint64_t>() - before;
    std::printf("node agent: published the provider's %d node-slice change(s) in %d pass(es), %llu API requests\n",
                published, passes + 1, static_cast<unsigned long long>(requests));
    return passes < 100;
}

// The server's request count ("" without a server: the local store makes none).
std::function<std::uint64_t()> request_counter(const apiserver_test::TestApiServer* server) {
    if (!server) return [] { return std::uint64_t{0}; };
    return [server] { return server->stats()["requests"].get<std::uint64_t>(); };
}

std::string per_claim(std::uint64_t requests, const char* note) {
    char text[96];
    std::snprintf(text, sizeof text, "API requests/claim %.2f%s", static_cast<double>(requests) / kClaims, note);
    return text;
}

// One warm-up claim (held), then kClaims claims answered and released one after the other.
bool bench_provider(const dranet_test::ProviderProcess& p, const std::string& profile, const std::string& label,
                    const apiserver_test::TestApiServer* server) {
    const auto count = request_counter(server);
    auto request = [&](const std::string& claim) {
        return dranet_test::profile_request({"eth1", "", ""}, claim, profile);
    };
    const auto w0 = count();
    const auto warm = dranet_test::http(p.socket(), "POST", "/GetProfileConfig", request("warm-" + profile));
    if (warm.status != 200) {
        std::cerr << label << ": warm-up claim: " << warm.status << " " << warm.body << '\n' << p.log();
        return false;
    }
    const auto warm_requests = count() - w0;
    std::vector<double> get_ms, release_ms;
    const auto r0 = count();
    for (int i = 0; i < kClaims; ++i) {
        const std::string req = request("bench-" + profile + "-" + std::to_string(i));
        auto t0 = Clock::now();
        const auto g = dranet_test::http(p.socket(), "POST", "/GetProfileConfig", req);
        get_ms.push_back(ms_since(t0));
        t0 = Clock::now();
        const auto r = dranet_test::http(p.socket(), "POST", "/ReleaseProfileConfig", req);
        release_ms.push_back(ms_since(t0));
        if (g.status != 200 || r.status != 200) {
            std::cerr << label << " claim " << i << ": " << g.status << " " << g.body << " / " << r.status << " "
                      << r.body << '\n';
            return false;
        }
    }
    const auto requests = count() - r0;
    report("dranet-provider " + label + " GetProfileConfig", get_ms,
           per_claim(requests, (" (warm-up claim: " + std::to_string(warm_requests) + ")").c_str()));
    report("dranet-provider " + label + " ReleaseProfileConfig", release_ms, "");
    return true;
}

bool bench_ipam(const json& ipam, const std::string& label, const apiserver_test::TestApiServer* server) {
    const auto count = request_counter(server);
    const std::string conf =
        json{{"cniVersion", "1.0.0"}, {"name", "benchnet"}, {"type", "macvlan"}, {"ipam", ipam}}.dump();
    static int round = 0;  // container ids distinct across the rows
    const std::string prefix = "r" + std::to_string(++round) + "-";
    const auto w0 = count();
    if (run_ipam("ADD", prefix + "warm-ctr", conf) != 0) {
        std::cerr << "rdmanet-ipam " << label << ": warm-up ADD failed\n";
        return false;
    }
    const auto warm_requests = count() - w0;
    std::vector<double> add_ms, del_ms;
    const auto r0 = count();
    for (int i = 0; i < kClaims; ++i) {
        const std::string id = prefix + "bench-ctr-" + std::to_string(i);
        auto t0 = Clock::now();
        const int a = run_ipam("ADD", id, conf);
        add_ms.push_back(ms_since(t0));
        t0 = Clock::now();
        const int d = run_ipam("DEL", id, conf);
        del_ms.push_back(ms_since(t0));
        if (a != 0 || d != 0) {
            std::cerr << "rdmanet-ipam " << label << " " << id << ": ADD " << a << ", DEL " << d << '\n';
            return false;
        }
    }
    const auto requests = count() - r0;
    report("rdmanet-ipam " + label + " ADD (process)", add_ms,
           per_claim(requests, (" (warm-up ADD: " + std::to_string(warm_requests) + ")").c_str()));
    report("rdmanet-ipam " + label + " DEL (process)", del_ms, "");
    return true;
}

// nv-ipam's CIDRPool `name` with node-1's subnet in its status, as nv-ipam's controller writes it.
void create_cidrpool(const apiserver_test::TestApiServer& server, const std::string& name, const std::string& cidr,
                     const std::string& prefix, const std::string& gateway) {
    const std::string api = "/apis/nv-ipam.nvidia.com/v1alpha1/namespaces/kube-system/cidrpools";
    const json pool = {{"apiVersion", "nv-ipam.nvidia.com/v1alpha1"},
                       {"kind", "CIDRPool"},
                       {"metadata", {{"name", name}, {"namespace", "kube-system"}}},
                       {"spec", {{"cidr", cidr}, {"perNodeNetworkPrefix", 24}, {"gatewayIndex", 1}}}};
    auto created = server.request("POST", api, pool.dump());
    if (created.status != 201) throw std::runtime_error("creating CIDRPool " + name + ": " + created.text);
    json with_status = created.body;
    with_status["status"] = {{"allocations", {{{"nodeName", "node-1"}, {"prefix", prefix}, {"gateway", gateway}}}}};
    auto w = server.request("PUT", api + "/" + name + "/status", with_status.dump());
    if (w.status != 200) throw std::runtime_error("writing CIDRPool " + name + " status: " + w.text);
}

int run() {
    apiserver_test::TestApiServer server;
    const std::string kubeconfig = server.write_kubeconfig("kubeconfig");
    create_cidrpool(server, "rail-dra", "10.95.0.0/16", "10.95.7.0/24", "10.95.7.1");
    create_cidrpool(server, "rail-cni", "10.96.0.0/16", "10.96.7.0/24", "10.96.7.1");

    dranet_test::ProviderProcess p("bench");
    // The node policy's defaults keep data_dir under /var/lib/cni/rdmanet and kubeconfigs under
    // /etc/cni/net.d: allow the temp dirs (the provider and rdmanet-ipam read the same policy).
    const std::string policy = p.dir() + "/policy.json";
    std::ofstream(policy)
        << json{{"ipamDataDirs", {p.dir()}}, {"logDir", p.dir()}, {"kubeconfigDirs", {server.dir()}}}.dump();
    ::setenv("RDMANET_POLICY_FILE", policy.c_str(), 1);
    const std::string data = p.data_dir();
    auto kube = [&](json ipam) {
        ipam["datastore"] = "kubernetes";
        ipam["data_dir"] = data;
        return ipam;
    };
    // Profiles: no kubeconfig of their own, the provider's --kubeconfig serves them.
    p.write_profile("local", {{"ipam", {{"range", "10.90.0.0/16"}, {"gateway", "10.90.0.1"}, {"data_dir", data}}},
                              {"policyRouting", true}});
    p.write_profile("ippool", {{"ipam", kube({{"range", "10.92.0.0/16"}, {"gateway", "10.92.0.1"}})},
                               {"policyRouting", true},
                               dranet_test::kNoWhereaboutsReconciler});
    p.write_profile("slices",
                    {{"network", "slices-dra"},
                     {"ipam", kube({{"range", "10.93.0.0/16"}, {"gateway", "10.93.0.1"}, {"node_slice_size", "/24"}})},
                     {"policyRouting", true},
                     dranet_test::kNoWhereaboutsReconciler});
    p.write_profile("cidrpool", {{"ipam", {{"poolName", "rail-dra"}, {"poolType", "cidrpool"}, {"data_dir", data}}},
                                 {"policyRouting", true}});
    p.extra_args = {"--kubeconfig", kubeconfig};
    p.start();
    server.set_faults({{"latency_ms", kLatencyMs}});

    const json with_kubeconfig = {{"kubeconfig", kubeconfig}};
    const json ipam_local = {
        {"type", "rdmanet-ipam"}, {"range", "10.91.0.0/16"}, {"gateway", "10.91.0.1"}, {"data_dir", data}};
    json ipam_ippool = kube({{"type", "rdmanet-ipam"}, {"range", "10.94.0.0/16"}, {"gateway", "10.94.0.1"}});
    ipam_ippool["kubernetes"] = with_kubeconfig;
    json ipam_slices = kube({{"type", "rdmanet-ipam"},
                             {"range", "10.97.0.0/16"},
                             {"gateway", "10.97.0.1"},
                             {"node_slice_size", "/24"},
                             {"network_name", "slices-cni"}});
    ipam_slices["kubernetes"] = with_kubeconfig;
    const json ipam_cidrpool = {{"type", "rdmanet-ipam"},
                                {"poolName", "rail-cni"},
                                {"poolType", "cidrpool"},
                                {"data_dir", data},
                                {"kubernetes", with_kubeconfig}};

    std::printf("test API server: %d ms added latency per request; %d claims per row after one warm-up claim\n",
                kLatencyMs, kClaims);
    const bool ok = bench_provider(p, "local", "local", nullptr) && bench_ipam(ipam_local, "local", nullptr) &&
                    bench_provider(p, "ippool", "whereabouts IPPool", &server) &&
                    bench_ipam(ipam_ippool, "whereabouts IPPool", &server) &&
                    bench_provider(p, "slices", "node slices", &server) && agent_publishes(kubeconfig, data, server) &&
                    bench_ipam(ipam_slices, "node slices", &server) &&
                    bench_provider(p, "cidrpool", "nv-ipam CIDRPool", &server) &&
                    bench_ipam(ipam_cidrpool, "nv-ipam CIDRPool", &server);
    server.set_faults({{"latency_ms", 0}});
    return ok ? 0 : 1;
}

}  // namespace

int main() {
    try {
        return run();
    } catch (const std::exception& e) {
        std::cerr << "dranet_bench: " << e.what() << '\n';
        return 1;
    }
}
