// Node-slice benchmark: a simulated cluster against bin/test_apiserver with added latency per
// request. N nodes x M pods on one range in /S slices, K ADDs in flight; each node has its own
// name and local store directory (as each node's plugin has), and each ADD opens its own store
// (kubeconfig load, new connection with its TLS handshake), as one exec of the plugin does.
//
//   bin/kube_slice_bench [--nodes 200] [--pods 100] [--slice 25] [--inflight 16] [--latency-ms 2]
//                        [--mode slices|single|cidrpool] [--server inrepo|real]
// --server real: against a real kube-apiserver + etcd (tests/apiserver/real_apiserver.hpp finds
// them: KUBEBUILDER_ASSETS, ...) with the rdmanet service account's token; --latency-ms does not
// apply there (the real server's own latency is measured), request counts come from its /metrics
// (whereabouts' resources, lists as GET), bytes written are not known, and the largest object is
// the largest IPPool's JSON as listed at the end.
//
// Pods are started node-interleaved (pod i on node i % nodes), so every node claims its first
// slice while the others do: the claim race of a cluster-wide rollout is part of the figures.
// Reported: ADDs, ADD/s, p50/p99 ADD latency, API requests and request-body bytes written per ADD
// (as the server counts them), the largest object stored, failures; in slice mode separately for
// the first ADD of every node (which claims its slice) and for the rest (the steady state, where a
// node's slice is held), then for the whole run.
// --mode single: the same ADDs on one IPPool for the whole range (no node_slice_size), which
// stops at etcd's 1.5 MiB object limit: reported are the ADDs that succeeded, the time the first
// refused ADD took and its error code and message.
// --mode cidrpool: the same cluster on an nv-ipam CIDRPool (the range in /S subnets per node,
// gatewayIndex 1), no controller: every node's first ADD claims its subnet by a status write,
// the rest allocate in the node's local store from the cached subnet (target: 0 API requests).
// The server shares the machine's CPUs with the client (see kube_bench.cpp for what that means).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"
#include "real_apiserver.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/ipam.hpp"
#include "rdmanet/ipam/kube/kube_store.hpp"
#include "rdmanet/ipam/kube/slice_store.hpp"

using namespace rdmanet::ipam;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    int nodes = 200, pods = 100, slice = 25, inflight = 16, latency_ms = 2;
    std::string mode = "slices";
    std::string server = "inrepo";
};

// The in-repo server's /_test/stats, or the same shape from the real server's counters.
json server_stats(const apiserver_test::ApiServer& server) {
    if (!server.is_real()) return static_cast<const apiserver_test::TestApiServer&>(server).stats();
    const auto& real = static_cast<const apiserver_test::RealApiServer&>(server);
    json by_method = json::object();
    std::uint64_t total = 0;
    for (const auto& [m, n] : real.request_counts()) {
        by_method[m] = n;
        total += static_cast<std::uint64_t>(n);
    }
    std::uint64_t largest = 0;
    const auto list = real.request("GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/ippools");
    if (list.status == 200)
        for (const auto& item : list.body["items"]) largest = std::max<std::uint64_t>(largest, item.dump().size());
    // The listing itself is one more GET; not the benchmark's.
    if (by_method.contains("GET")) by_method["GET"] = by_method["GET"].get<std::uint64_t>() - 1, total -= 1;
    return {{"requests", total},
            {"by_method", by_method},
            {"bytes_by_method", json::object()},
            {"largest_object", largest}};
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

std::uint64_t sum_writes(const json& by_method) {
    std::uint64_t n = 0;
    for (const char* m : {"POST", "PUT", "PATCH", "DELETE"}) n += by_method.value(m, std::uint64_t{0});
    return n;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--server") {
            o.server = argv[i + 1];
            ++i;
            continue;
        }
        if (a == "--mode") {
            o.mode = argv[i + 1];
            continue;
        }
        const int v = std::atoi(argv[i + 1]);
        if (a == "--nodes")
            o.nodes = v;
        else if (a == "--pods")
            o.pods = v;
        else if (a == "--slice")
            o.slice = v;
        else if (a == "--inflight")
            o.inflight = v;
        else if (a == "--latency-ms")
            o.latency_ms = v;
        else {
            std::fprintf(stderr,
                         "usage: kube_slice_bench [--nodes N] [--pods N] [--slice S] [--inflight K] [--latency-ms N] "
                         "[--mode slices|single]\n");
            return 2;
        }
    }
    const bool slices = o.mode == "slices";
    const bool cidrpool = o.mode == "cidrpool";
    try {
        std::unique_ptr<apiserver_test::ApiServer> owned;
        if (o.server == "real") {
            owned = std::make_unique<apiserver_test::RealApiServer>();
            o.latency_ms = 0;
        } else {
            auto in_repo = std::make_unique<apiserver_test::TestApiServer>();
            in_repo->set_faults({{"latency_ms", o.latency_ms}});
            owned = std::move(in_repo);
        }
        const apiserver_test::ApiServer& server = *owned;
        const std::string kubeconfig = server.write_kubeconfig("kubeconfig");
        const std::string data = server.dir() + "/nodes";
        json ipam = {{"type", "rdmanet-ipam"},
                     {"range", "10.96.0.0/16"},
                     {"datastore", "kubernetes"},
                     {"network_name", "bench"}};
        if (slices) ipam["node_slice_size"] = "/" + std::to_string(o.slice);
        if (cidrpool) {
            ipam = {{"type", "rdmanet-ipam"},
                    {"poolName", "bench"},
                    {"poolType", "cidrpool"},
                    {"kubernetes", {{"kubeconfig", kubeconfig}}}};
            const json pool = {
                {"apiVersion", "nv-ipam.nvidia.com/v1alpha1"},
                {"kind", "CIDRPool"},
                {"metadata", {{"name", "bench"}, {"namespace", "kube-system"}}},
                {"spec", {{"cidr", "10.96.0.0/16"}, {"perNodeNetworkPrefix", o.slice}, {"gatewayIndex", 1}}}};
            const auto r = server.request("POST", "/apis/nv-ipam.nvidia.com/v1alpha1/namespaces/kube-system/cidrpools",
                                          pool.dump());
            if (r.status != 201) throw std::runtime_error("creating the CIDRPool: " + r.text);
        }
        const IpamConfig config = parse_ipam_config(ipam);
        const int total = o.nodes * o.pods;
        int all_failures = 0;

        // Runs ADDs [from, to) with o.inflight callers and prints one line of figures.
        const auto run = [&](const char* label, int from, int to) {
            std::mutex mu;
            std::vector<double> latencies;
            int failures = 0, succeeded = 0;
            std::string first_error;
            double first_error_ms = 0;
            int first_error_code = 0;
            std::atomic<int> next{from};
            std::atomic<bool> stop{false};
            const json before = server_stats(server);
            const auto start = Clock::now();
            std::vector<std::thread> threads;
            for (int c = 0; c < o.inflight; ++c) {
                threads.emplace_back([&] {
                    for (int i = next++; i < to && !stop; i = next++) {
                        const int node = i % o.nodes;
                        const std::string node_name = "node-" + std::to_string(node);
                        IpamRequest req;
                        req.config = config;
                        req.network = "bench";
                        char id[65];  // 64 hex digits, as container runtimes make them (an entry's size)
                        std::snprintf(id, sizeof id, "%064x", i);
                        req.container_id = id;
                        req.ifname = "net1";
                        req.podref = "bench/pod-" + std::to_string(i);
                        const auto t = Clock::now();
                        std::string error;
                        int code = 0;
                        try {
                            if (cidrpool) {
                                // The whole verb as the plugin runs it: block from the node's cache
                                // (or the claim), allocation in the node's local store.
                                req.config.store.nodename = node_name;
                                req.config.store.data_dir = data + "/" + node_name;
                                add(req);
                            } else if (slices) {
                                auto kc = kube::load_kubeconfig(kubeconfig);
                                kube::SliceStore store(std::move(kc), kube::Deadline::in(kube::kAddBudget),
                                                       data + "/" + node_name,
                                                       kube::SliceSettings{"bench", node_name, o.slice});
                                add(store, req);
                            } else {
                                auto kc = kube::load_kubeconfig(kubeconfig);
                                kube::KubeStore store(std::move(kc), kube::Deadline::in(kube::kAddBudget), "");
                                add(store, req);
                            }
                        } catch (const IpamError& e) {
                            error = e.msg;
                            code = e.code;
                        } catch (const std::exception& e) {
                            error = e.what();
                        }
                        const double ms = ms_since(t);
                        std::lock_guard lock(mu);
                        if (error.empty()) {
                            latencies.push_back(ms);
                            ++succeeded;
                        } else {
                            if (++failures == 1) {
                                first_error = error;
                                first_error_ms = ms;
                                first_error_code = code;
                            }
                            if (!slices) stop = true;  // single-object mode: stops at the size limit
                        }
                    }
                });
            }
            for (auto& t : threads) t.join();
            const double seconds = ms_since(start) / 1000.0;
            const json after = server_stats(server);
            const double requests = after["requests"].get<double>() - before["requests"].get<double>();
            const double bytes =
                static_cast<double>(sum_writes(after["bytes_by_method"]) - sum_writes(before["bytes_by_method"]));
            json by_method = json::object();
            for (const auto& [method, n] : after["by_method"].items()) {
                by_method[method] = n.get<std::uint64_t>() - before["by_method"].value(method, std::uint64_t{0});
            }
            std::printf(
                "%s [%s]: nodes=%d pods/node=%d slice=/%d inflight=%d latency=%dms: %d ADDs in %.2f s = %.0f ADD/s  "
                "p50 %.1f ms  p99 %.1f ms  requests/ADD %.2f  bytes written/ADD %.0f  largest object %llu B  "
                "failures %d\n",
                label, server.is_real() ? "real kube-apiserver" : "in-repo server", o.nodes, o.pods, o.slice,
                o.inflight, o.latency_ms, succeeded, seconds, succeeded / seconds, percentile(latencies, 0.5),
                percentile(latencies, 0.99), succeeded ? requests / succeeded : 0.0,
                succeeded ? bytes / succeeded : 0.0,
                static_cast<unsigned long long>(after["largest_object"].get<std::uint64_t>()), failures);
            std::printf("  requests by method: %s\n", by_method.dump().c_str());
            if (failures > 0) {
                std::printf("  first failure after %.0f ms, code %d: %s\n", first_error_ms, first_error_code,
                            first_error.c_str());
            }
            all_failures += failures;
        };

        if (slices || cidrpool) {
            // Two phases, so that the claims do not hide the steady state: every node's first ADD
            // (each claims a slice, racing the others), then the remaining ADDs, which find their
            // node's slice held and talk only to its IPPool.
            const auto wall = Clock::now();
            const json before = server_stats(server);
            run(slices ? "slices, first ADD per node (claims)" : "cidrpool, first ADD per node (claims)", 0,
                std::min(o.nodes, total));
            run(slices ? "slices, steady state" : "cidrpool, steady state", std::min(o.nodes, total), total);
            const json after = server_stats(server);
            const double seconds = ms_since(wall) / 1000.0;
            const double requests = after["requests"].get<double>() - before["requests"].get<double>();
            const int ok = total - all_failures;
            std::printf("%s, whole run: %d ADDs in %.2f s = %.0f ADD/s  requests/ADD %.2f\n", o.mode.c_str(), ok,
                        seconds, ok / seconds, ok ? requests / ok : 0.0);
        } else {
            run("single", 0, total);
        }
        return slices || cidrpool ? (all_failures == 0 ? 0 : 1) : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kube_slice_bench: %s\n", e.what());
        return 1;
    }
}
