// Kubernetes datastore benchmark: N concurrent callers on one pool against
// bin/test_apiserver with added latency per request, ADDs then DELs.
//
//   bin/kube_bench [--callers 16] [--ops 800] [--latency-ms 2] [--prefill 0] [--overlap 1]
//
// Each operation opens its own KubeStore (new connection, TLS handshake, kubeconfig load), as one
// exec of the plugin does, then runs ipam::add / ipam::del. Reported: allocations (and releases)
// per second, p50/p99/max latency per operation, API requests per operation as counted by the
// server, and the conflicts (lost resourceVersion races) that cost the extra ones.
// --prefill N first fills the pool with N allocations (and their reservations) so that every
// read and write carries a pool of that size.
//
// What the numbers include, so that they are read for what they are:
//  - client and server share the machine's CPUs (on a 2-vCPU machine the server takes about a
//    third), so the figures are lower than against a real apiserver on its own machine;
//  - the server (tests/apiserver) sleeps --latency-ms before handling each request and sends the
//    whole pool in every GET (as the kube-apiserver does); a PATCH is answered with the pool's
//    metadata only because the client asks for that (Accept as=PartialObjectMetadata, which the
//    kube-apiserver honours too). It keeps each object's serialized form per resourceVersion,
//    re-serializes only the allocation entries a write changed, checks the CRD schema of those
//    entries (the rest of the object is unchanged and was checked when written) and applies JSON
//    patches in place (resource_store.hpp) - shortcuts of the test server only, which a real
//    apiserver does not take; it runs with TCP_NODELAY and a listen backlog of somaxconn, as
//    Go's net/http does (without them, Nagle against delayed ACKs added 40 ms per request and
//    SYN drops 1 s stalls);
//  - it has no etcd, no admission, no watch cache: a real cluster adds its own per-write cost;
//  - each operation pays a full TLS handshake (ECDSA P-256 test CA) and kubeconfig load, as
//    one plugin exec does; "requests/op" counts every API request the server saw, retries and
//    lost races included.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"
#include "rdmanet/ipam/ipam.hpp"
#include "rdmanet/ipam/kube/kube_store.hpp"

using namespace rdmanet::ipam;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    int callers = 16, ops = 800, latency_ms = 2, prefill = 0;
    bool overlap = true;
};

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

std::string ip_text(std::uint32_t v) {
    return std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 255) + "." + std::to_string((v >> 8) & 255) +
           "." + std::to_string(v & 255);
}

// Fills the pool and its reservations through the API (latency off while doing it), over one
// kept-alive connection (rdmanet's own client): 10k TLS handshakes would take minutes.
void prefill(const std::string& kubeconfig, int n, bool overlap) {
    kube::KubeApi api(kube::load_kubeconfig(kubeconfig), kube::Deadline::in(std::chrono::minutes(10)));
    const std::string base = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/";
    json allocs = json::object();
    for (int i = 0; i < n; ++i) {
        allocs[std::to_string(1000 + i)] = {
            {"id", "pre" + std::to_string(i)}, {"podref", "pre/p" + std::to_string(i)}, {"ifname", "net1"}};
    }
    json pool = {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
                 {"kind", "IPPool"},
                 {"metadata", {{"name", "10.80.0.0-16"}, {"namespace", "kube-system"}}},
                 {"spec", {{"range", "10.80.0.0/16"}, {"allocations", allocs}}}};
    auto r = api.call("POST", base + "ippools", pool.dump());
    if (r.status != 201) throw std::runtime_error("prefill pool: HTTP " + std::to_string(r.status) + " " + r.body);
    if (!overlap) return;
    const std::uint32_t first = (10u << 24) | (80u << 16);
    for (int i = 0; i < n; ++i) {
        json orip = {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
                     {"kind", "OverlappingRangeIPReservation"},
                     {"metadata", {{"name", ip_text(first + 1000 + i)}}},
                     {"spec", {{"podref", "pre/p" + std::to_string(i)}, {"ifname", "net1"}}}};
        auto o = api.call("POST", base + "overlappingrangeipreservations", orip.dump());
        if (o.status != 201)
            throw std::runtime_error("prefill reservation: HTTP " + std::to_string(o.status) + " " + o.body);
    }
}

struct Phase {
    std::vector<double> latencies;
    double seconds = 0;
    std::uint64_t requests = 0;
    int failures = 0;
};

Phase run_phase(const Options& o, const apiserver_test::TestApiServer& server, const std::string& kubeconfig,
                const IpamConfig& config, bool add_phase) {
    Phase phase;
    std::mutex mu;
    std::atomic<int> next{0};
    const std::uint64_t before = server.stats()["requests"].get<std::uint64_t>();
    const auto start = Clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < o.callers; ++c) {
        threads.emplace_back([&] {
            for (int i = next++; i < o.ops; i = next++) {
                IpamRequest req;
                req.config = config;
                req.network = "bench";
                req.container_id = "ctr-" + std::to_string(i);
                req.ifname = "net1";
                req.podref = "bench/pod-" + std::to_string(i);
                const auto t = Clock::now();
                bool ok = true;
                try {
                    const auto budget = add_phase ? kube::kAddBudget : kube::kDelBudget;
                    kube::KubeStore store(kube::load_kubeconfig(kubeconfig), kube::Deadline::in(budget), "");
                    if (add_phase)
                        add(store, req);
                    else
                        del(store, req);
                } catch (const std::exception& e) {
                    ok = false;
                    std::fprintf(stderr, "kube_bench: %s %d: %s\n", add_phase ? "ADD" : "DEL", i, e.what());
                }
                const double ms = ms_since(t);
                std::lock_guard lock(mu);
                phase.latencies.push_back(ms);
                if (!ok) ++phase.failures;
            }
        });
    }
    for (auto& t : threads) t.join();
    phase.seconds = ms_since(start) / 1000.0;
    phase.requests = server.stats()["requests"].get<std::uint64_t>() - before;  // /_test/* calls are not counted
    return phase;
}

void report(const char* what, const Options& o, const Phase& p) {
    std::printf(
        "%-4s callers=%d latency=%dms prefill=%d overlap=%s: %d ops in %.2f s = %.0f/s  p50 %.1f ms  p99 %.1f ms  "
        "max %.1f ms  requests/op %.2f  failures %d\n",
        what, o.callers, o.latency_ms, o.prefill, o.overlap ? "on" : "off", o.ops, p.seconds, o.ops / p.seconds,
        percentile(p.latencies, 0.5), percentile(p.latencies, 0.99), percentile(p.latencies, 1.0),
        static_cast<double>(p.requests) / o.ops, p.failures);
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const int v = std::atoi(argv[i + 1]);
        if (a == "--callers")
            o.callers = v;
        else if (a == "--ops")
            o.ops = v;
        else if (a == "--latency-ms")
            o.latency_ms = v;
        else if (a == "--prefill")
            o.prefill = v;
        else if (a == "--overlap")
            o.overlap = v != 0;
        else {
            std::fprintf(stderr,
                         "usage: kube_bench [--callers N] [--ops N] [--latency-ms N] [--prefill N] [--overlap 0|1]\n");
            return 2;
        }
    }
    try {
        apiserver_test::TestApiServer server;
        const std::string kubeconfig = server.write_kubeconfig("kubeconfig");
        if (o.prefill > 0) prefill(kubeconfig, o.prefill, o.overlap);
        server.set_faults({{"latency_ms", o.latency_ms}});
        const IpamConfig config = parse_ipam_config(
            {{"type", "rdmanet-ipam"}, {"range", "10.80.0.0/16"}, {"enable_overlapping_ranges", o.overlap}});
        const Phase adds = run_phase(o, server, kubeconfig, config, true);
        report("ADD", o, adds);
        const Phase dels = run_phase(o, server, kubeconfig, config, false);
        report("DEL", o, dels);
        server.set_faults({{"latency_ms", 0}});
        const auto left =
            server.request("GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools/10.80.0.0-16");
        const std::size_t remaining = left.body["spec"]["allocations"].size();
        if (remaining != static_cast<std::size_t>(o.prefill)) {
            std::fprintf(stderr, "kube_bench: %zu allocations left, expected the %d prefilled\n", remaining, o.prefill);
            return 1;
        }
        return adds.failures + dels.failures == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kube_bench: %s\n", e.what());
        return 1;
    }
}
