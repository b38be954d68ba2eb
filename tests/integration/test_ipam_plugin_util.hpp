#pragma once
// Shared by the tests/integration/test_ipam_plugin_*.cpp suites: bin/rdmanet-ipam and
// bin/rdmanetctl driven as real processes, the way a CNI plugin (or an admin) runs them. No root
// needed: every store lives in a temp dir the test owns.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../unit/ipam_test_util.hpp"
#include "support/cni_driver.hpp"
#include "support/process.hpp"

namespace ipam_plugin_test {

using nlohmann::json;
using rdmanet::test::CniOutcome;
using rdmanet::test::PluginRequest;

// The node policy's defaults keep data_dir under /var/lib/cni/rdmanet (and device-info files
// under Multus' directory); these suites put every store (and the sriov beds) in a temp dir, so
// the test process (and every plugin it starts, which inherits the environment) runs under a
// test policy that allows the temp directory instead.
inline const bool kTestPolicyInstalled = [] {
    const auto tmp = std::filesystem::temp_directory_path().string();
    const std::string file = tmp + "/rdmanet-ipam-test-policy-" + std::to_string(::getpid()) + ".json";
    std::ofstream(file, std::ios::trunc) << json{
        {"ipamDataDirs", {tmp}},
        {"ipamConfigDirs", {tmp}},
        {"kubeconfigDirs", {tmp}},
        {"deviceInfoDirs", {tmp}},
        {"logDir",
         tmp + "/rdmanet-ipam-test-logs"}}.dump();
    ::setenv("RDMANET_POLICY_FILE", file.c_str(), 1);
    static const struct Remove {
        std::string path;
        pid_t owner;
        ~Remove() {
            if (::getpid() == owner) std::remove(path.c_str());  // not from a forked child's exit()
        }
    } remove{file, ::getpid()};
    return true;
}();

inline std::string ipam_plugin_path() { return rdmanet::test::bin_dir() + "/rdmanet-ipam"; }
inline std::string ctl_path() { return rdmanet::test::bin_dir() + "/rdmanetctl"; }

// The plugin config as a CNI plugin hands it to its IPAM (the IPAM plugin reads "ipam" and "name").
inline json net_conf(const std::string& name, const json& ipam, const std::string& version = "1.0.0") {
    json i = ipam;
    if (!i.contains("type")) i["type"] = "rdmanet-ipam";
    return {{"cniVersion", version}, {"name", name}, {"type", "macvlan"}, {"ipam", i}};
}

// K8S_POD_NAMESPACE / K8S_POD_NAME in CNI_ARGS, as kubelet sets them.
inline std::string pod_args(const std::string& ns, const std::string& name) {
    return "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + ns + ";K8S_POD_NAME=" + name;
}

struct Call {
    std::string command;  // ADD, DEL, CHECK, GC, VERSION
    std::string container_id;
    std::string ifname = "net1";
    std::string args;  // CNI_ARGS
};

inline CniOutcome ipam_call(const Call& c, const json& conf) {
    PluginRequest req;
    req.command = c.command;
    req.container_id = c.container_id;
    req.netns = "/var/run/netns/unused";  // an IPAM plugin never enters it
    req.ifname = c.ifname;
    req.args = c.args;
    req.path = rdmanet::test::bin_dir();
    req.stdin_data = conf.dump();
    return rdmanet::test::invoke_plugin(ipam_plugin_path(), req);
}

// ADD for pod ns/<id> with container id <id>.
inline CniOutcome add(const json& conf, const std::string& id, const std::string& ifname = "net1") {
    return ipam_call({"ADD", id, ifname, pod_args("ns", id)}, conf);
}
inline CniOutcome del(const json& conf, const std::string& id, const std::string& ifname = "net1") {
    return ipam_call({"DEL", id, ifname, pod_args("ns", id)}, conf);
}

// The first address of an ADD result without its prefix length ("" when absent).
inline std::string first_ip(const CniOutcome& o) {
    if (!o.json.is_object() || !o.json.contains("ips") || o.json["ips"].empty()) return "";
    const std::string cidr = o.json["ips"][0].value("address", "");
    return cidr.substr(0, cidr.find('/'));
}

// bin/rdmanetctl with args.
inline rdmanet::test::ProcessResult ctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{ctl_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    return rdmanet::test::run_process(argv);
}

// `rdmanetctl pool list --json --data-dir dir`, parsed; fails the test when it does not work.
inline json pool_list_json(const std::string& data_dir) {
    const auto r = ctl({"pool", "list", "--json", "--data-dir", data_dir});
    INFO("rdmanetctl pool list: exit " << r.exit_code << " stdout " << r.out << " stderr " << r.err);
    REQUIRE(r.exit_code == 0);
    json j = json::parse(r.out, nullptr, false);
    REQUIRE(j.is_array());
    return j;
}

// Allocations of the pool named `pool_name` from `pool list --json`: offset -> {id, podref, ifname}.
inline std::map<std::string, json> allocations_of(const json& pools, const std::string& pool_name) {
    std::map<std::string, json> out;
    for (const auto& p : pools) {
        if (p["metadata"].value("name", "") != pool_name) continue;
        for (const auto& [offset, owner] : p["spec"]["allocations"].items()) out[offset] = owner;
    }
    return out;
}

// Total number of allocations over every pool.
inline std::size_t total_allocations(const json& pools) {
    std::size_t n = 0;
    for (const auto& p : pools) n += p["spec"]["allocations"].size();
    return n;
}

// `rdmanetctl pool verify`: exit code and output, for INFO.
inline void require_verify_clean(const std::string& data_dir) {
    const auto r = ctl({"pool", "verify", "--data-dir", data_dir});
    INFO("rdmanetctl pool verify: exit " << r.exit_code << " stdout " << r.out << " stderr " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.empty());
}

// IPv4 dotted quad -> 32-bit value (test-side arithmetic, independent of the product's).
inline std::optional<std::uint32_t> v4(const std::string& text) {
    unsigned a, b, c, d;
    char tail;
    if (std::sscanf(text.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4) return std::nullopt;
    if (a > 255 || b > 255 || c > 255 || d > 255) return std::nullopt;
    return (a << 24) | (b << 16) | (c << 8) | d;
}

}  // namespace ipam_plugin_test
