#pragma once
// Shared by tests/integration/test_kube_*.cpp: bin/rdmanet-ipam and bin/rdmanetctl against an API
// server, as real processes: the in-repo test API server (tests/apiserver) or, with
// RDMANET_TEST_APISERVER=real, a real kube-apiserver + etcd (ServerUnderTest). Kubeconfigs, the IPAM data dir (node
// journal) and a node policy allowing both live in the server's private directory; the policy is
// handed over in RDMANET_POLICY_FILE as a runtime would.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixture.hpp"
#include "server_under_test.hpp"
#include "test_ipam_plugin_util.hpp"

namespace kube_test {

using apiserver_test::ApiServer;
using apiserver_test::ServerUnderTest;
using apiserver_test::TestApiServer;
using nlohmann::json;
using rdmanet::test::CniOutcome;

inline const std::string kNs = "kube-system";

struct Env {
    const ApiServer& server;
    std::string kubeconfig;
    std::string data_dir;
    std::string policy;

    explicit Env(const ApiServer& s, const apiserver_test::KubeconfigOptions& kc = {},
                 const std::string& kubeconfig_name = "kubeconfig")
        : server(s),
          kubeconfig(s.write_kubeconfig(kubeconfig_name, kc)),
          data_dir(s.dir() + "/ipam"),
          policy(s.dir() + "/policy.json") {
        if (!kc.ns.empty()) s.ensure_namespace(kc.ns);
        std::ofstream(policy) << json{
            {"version", 1},
            {"logDir", s.dir()},
            {"kubeconfigDirs", {s.dir()}},
            {"ipamConfigDirs", {s.dir()}},
            {"ipamDataDirs",
             {s.dir()}}}.dump();
    }

    // An IPAM config on the Kubernetes datastore.
    json conf(const std::string& range, json extra = json::object(), const std::string& kubeconfig_path = "") const {
        json ipam = {{"type", "rdmanet-ipam"},
                     {"range", range},
                     {"datastore", "kubernetes"},
                     {"kubernetes", {{"kubeconfig", kubeconfig_path.empty() ? kubeconfig : kubeconfig_path}}},
                     {"data_dir", data_dir}};
        for (auto& [k, v] : extra.items()) ipam[k] = v;
        return ipam_plugin_test::net_conf("kubenet", ipam);
    }

    // The same IPAM config as the ipam object of a DRANET provider's profile: no "type" (a
    // profile's IPAM is always the provider's own).
    json profile_ipam(const std::string& range, json extra = json::object()) const {
        json ipam = conf(range, std::move(extra))["ipam"];
        ipam.erase("type");
        return ipam;
    }

    std::map<std::string, std::string> env() const { return {{"RDMANET_POLICY_FILE", policy}}; }

    CniOutcome call(const std::string& command, const json& conf, const std::string& container_id,
                    const std::string& pod, const std::string& ifname = "net1",
                    std::chrono::milliseconds timeout = std::chrono::seconds(90)) const {
        rdmanet::test::PluginRequest req;
        req.command = command;
        req.container_id = container_id;
        req.netns = "/var/run/netns/unused";
        req.ifname = ifname;
        req.args = ipam_plugin_test::pod_args("ns", pod);
        req.path = rdmanet::test::bin_dir();
        req.stdin_data = conf.dump();
        return rdmanet::test::invoke_plugin(ipam_plugin_test::ipam_plugin_path(), req, env(), timeout);
    }

    rdmanet::test::ProcessResult ctl(std::vector<std::string> args) const {
        std::vector<std::string> argv{ipam_plugin_test::ctl_path()};
        argv.insert(argv.end(), args.begin(), args.end());
        return rdmanet::test::run_process(argv, env());
    }
};

// spec.allocations of the pool (empty when the pool does not exist).
inline json allocations(const ApiServer& s, const std::string& pool) {
    auto r = s.request("GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/" + kNs + "/ippools/" + pool);
    if (r.status == 404) return json::object();
    REQUIRE(r.status == 200);
    return r.body["spec"]["allocations"];
}

// name -> spec of every reservation.
inline std::map<std::string, json> reservations(const ApiServer& s) {
    std::map<std::string, json> out;
    for (const auto& item : s.list(kNs, "overlappingrangeipreservations")) out[item["metadata"]["name"]] = item["spec"];
    return out;
}

// IPv4 pool: every allocation has its reservation (same podref/ifname) and every reservation its
// allocation. `base` = the pool's network address as a.b.c.0 prefix "10.40.0." with offsets < 256
// not assumed: computes from a 32-bit base.
inline std::vector<std::string> consistency_problems(const ApiServer& s, const std::string& pool, std::uint32_t base) {
    std::vector<std::string> problems;
    const json allocs = allocations(s, pool);
    auto res = reservations(s);
    std::set<std::string> expected;
    for (const auto& [offset, owner] : allocs.items()) {
        const std::uint32_t v = base + static_cast<std::uint32_t>(std::stoul(offset));
        const std::string ip = std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 255) + "." +
                               std::to_string((v >> 8) & 255) + "." + std::to_string(v & 255);
        expected.insert(ip);
        auto it = res.find(ip);
        if (it == res.end()) {
            problems.push_back("allocation " + offset + " (" + ip + ") has no reservation");
        } else if (it->second.value("podref", "") != owner.value("podref", "") ||
                   it->second.value("ifname", "") != owner.value("ifname", "")) {
            problems.push_back("reservation " + ip + " belongs to " + it->second.dump() + ", pool says " +
                               owner.dump());
        }
    }
    for (const auto& [name, spec] : res) {
        if (!expected.count(name)) problems.push_back("reservation " + name + " has no allocation");
    }
    return problems;
}

// whereabouts' API group in the test namespace.
inline const std::string kApi = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/" + kNs;

// GET of kApi + path, which must answer 200.
inline json get(const ApiServer& s, const std::string& path) {
    auto r = s.request("GET", kApi + path);
    INFO("GET " << path << ": " << r.text);
    REQUIRE(r.status == 200);
    return r.body;
}

// nv-ipam's API group in the test namespace.
inline const std::string kNvApi = "/apis/nv-ipam.nvidia.com/v1alpha1/namespaces/" + kNs;

// Creates an nv-ipam pool (`plural`: ippools or cidrpools) in nv-ipam's exact shape; with
// `allocations`, writes its status as nv-ipam's controller does (PUT .../status, the only way a
// real server takes it).
inline void create_nv_pool(const ApiServer& s, const std::string& plural, const std::string& name, const json& spec,
                           const json& allocations = nullptr) {
    const json object = {{"apiVersion", "nv-ipam.nvidia.com/v1alpha1"},
                         {"kind", plural == "ippools" ? "IPPool" : "CIDRPool"},
                         {"metadata", {{"name", name}, {"namespace", kNs}}},
                         {"spec", spec}};
    auto r = s.request("POST", kNvApi + "/" + plural, object.dump());
    INFO(r.text);
    REQUIRE(r.status == 201);
    if (allocations.is_null()) return;
    json with_status = r.body;
    with_status["status"] = {{"allocations", allocations}};
    auto w = s.request("PUT", kNvApi + "/" + plural + "/" + name + "/status", with_status.dump());
    INFO(w.text);
    REQUIRE(w.status == 200);
}

// Concurrent plugin calls: what each successful call gave (its first address without the prefix
// length, "" for a DEL) and one line per failed call, both by the key the call names.
struct ParallelCalls {
    std::map<std::string, std::string> ip_of;
    std::vector<std::string> failures;  // "key: what went wrong"
};

// Runs call(w, i) for i in [0, per_worker) on each of `workers` threads, so that `workers` plugin
// processes run at once; `call` returns its key and the outcome.
template <class Call>
ParallelCalls in_parallel(int workers, int per_worker, Call call) {
    ParallelCalls out;
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
        threads.emplace_back([&, w] {
            for (int i = 0; i < per_worker; ++i) {
                const std::pair<std::string, CniOutcome> done = call(w, i);
                std::lock_guard lock(mu);
                if (done.second.exit_code != 0)
                    out.failures.push_back(done.first + ": " + done.second.describe());
                else
                    out.ip_of[done.first] = ipam_plugin_test::first_ip(done.second);
            }
        });
    }
    for (auto& t : threads) t.join();
    return out;
}

// One bin/rdmanet-ipam call as simulated node `node` (its own $NODENAME and local store).
inline CniOutcome call_on(const Env& env, const std::string& node, const std::string& command, const json& conf,
                          const std::string& id, std::chrono::milliseconds timeout = std::chrono::seconds(90)) {
    rdmanet::test::PluginRequest req;
    req.command = command;
    req.container_id = id;
    req.netns = "/var/run/netns/unused";
    req.ifname = "net1";
    req.args = ipam_plugin_test::pod_args("ns", "pod-" + id);
    req.path = rdmanet::test::bin_dir();
    json c = conf;
    c["ipam"]["data_dir"] = env.data_dir + "/" + node;  // each node its own local store
    req.stdin_data = c.dump();
    auto e = env.env();
    e["NODENAME"] = node;
    return rdmanet::test::invoke_plugin(ipam_plugin_test::ipam_plugin_path(), req, e, timeout);
}

}  // namespace kube_test
