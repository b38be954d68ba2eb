#pragma once
// A test bed for mode "sriov" in-process: the fake SR-IOV node (support/fake_sriov_node.hpp: a
// PF, an Ethernet VF whose netdev is a real veth end so the move/rename path runs on the real
// kernel, a vfio-bound VF, an InfiniBand PF + VF), a pod netns, and a recording fake of PF-side VF netlink injected
// through run_plugin's KernelServices seam.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "netns_helpers.hpp"
#include "rdmanet/cni/plugin/plugin.hpp"
#include "rdmanet/netns/sysfs.hpp"
#include "support/fake_sriov_node.hpp"
#include "support/fake_sysfs.hpp"
#include "support/fake_vf_control.hpp"

namespace rdmanet::test::sriov {

inline constexpr const char* kPfPci = FakeSriovNode::kPfPci;
inline constexpr const char* kVfPci = FakeSriovNode::kVfPci;
inline constexpr const char* kVfioPci = FakeSriovNode::kVfioPci;
inline constexpr const char* kIbPfPci = FakeSriovNode::kIbPfPci;
inline constexpr const char* kIbVfPci = FakeSriovNode::kIbVfPci;

struct Outcome {
    int rc = -1;
    nlohmann::json out;
    std::string raw;
    int code() const { return out.value("code", 0); }
    std::string msg() const { return out.value("msg", ""); }
};

// The host-side view of a netdev that DEL must restore.
struct NetdevSnapshot {
    std::string name, mac, alias;
    unsigned mtu = 0;
    bool up = false;
    friend bool operator==(const NetdevSnapshot&, const NetdevSnapshot&) = default;
};

class SriovBed {
public:
    SriovBed()
        : pod("sriov"),
          vf0(nullptr, nullptr, "vf"),
          ibvf(nullptr, nullptr, "ib"),
          pf(unique_name("pf")),
          ibpf(unique_name("ibpf")),
          work(make_workdir()),
          sysfs(tree.root()),
          policy_file(write_policy(work)) {
        // The same node as the e2e tests', without an RDMA device on the IB VF (this bed runs
        // with the real kernel's RDMA netlink, which has none).
        FakeSriovNode{pf, ibpf, vf0.name_a(), ibvf.name_a()}.build(tree, fake);
    }
    ~SriovBed() {
        std::error_code ec;
        std::filesystem::remove_all(work, ec);
    }

    // One in-process plugin call with the fake VF netlink.
    Outcome call(const std::string& command, const nlohmann::json& conf, const std::string& container_id,
                 const std::string& cni_args = "", const std::string& netns_path = "") {
        std::map<std::string, std::string> env = {{"CNI_COMMAND", command},
                                                  {"CNI_CONTAINERID", container_id},
                                                  {"CNI_NETNS", netns_path.empty() ? pod.path() : netns_path},
                                                  {"CNI_IFNAME", "net1"},
                                                  {"CNI_PATH", "/nonexistent"}};
        if (!cni_args.empty()) env["CNI_ARGS"] = cni_args;
        env["RDMANET_POLICY_FILE"] = policy_file;
        const cni::EnvLookup lookup = [env](const char* name) -> std::optional<std::string> {
            auto it = env.find(name);
            if (it == env.end()) return std::nullopt;
            return it->second;
        };
        std::istringstream in(conf.dump());
        std::ostringstream out, err;
        cni::KernelServices services;
        services.vf = &fake;
        services.sysfs = &sysfs;
        Outcome o;
        o.rc = cni::run_plugin(lookup, in, out, err, services);
        o.raw = out.str();
        if (!o.raw.empty()) o.out = nlohmann::json::parse(o.raw, nullptr, false);
        return o;
    }

    nlohmann::json conf(const nlohmann::json& extra = nlohmann::json::object(),
                        const std::string& version = "1.1.0") const {
        nlohmann::json j = {{"cniVersion", version},
                            {"name", "sriov-test"},
                            {"type", "rdmanet"},
                            {"mode", "sriov"},
                            {"deviceID", kVfPci}};
        j.update(extra);
        return j;
    }

    std::optional<NetdevSnapshot> host_netdev(const std::string& name) const {
        netns::Rtnl host;
        auto link = host.link_by_name(name);
        if (!link) return std::nullopt;
        return NetdevSnapshot{link->name, link->mac, link->alias, link->mtu, link->up};
    }
    std::vector<std::string> pod_links() const {
        std::vector<std::string> names;
        for (const auto& link : rtnl_in(pod)->links()) names.push_back(link.name);
        return names;
    }
    std::string state_dir() const { return work + "/state"; }
    bool vf_record_exists(const std::string& pci) const {
        return std::filesystem::exists(state_dir() + "/sriov/pci/" + pci);
    }
    std::size_t state_files() const {
        std::size_t n = 0;
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(state_dir(), ec))
            if (e.is_regular_file()) ++n;
        return n;
    }

    ScopedNetns pod;
    ScopedVeth vf0;   // name_a(): the Ethernet VF's netdev
    ScopedVeth ibvf;  // name_a(): the IB VF's netdev (an Ethernet veth standing in)
    std::string pf, ibpf;
    FakeSysfs tree;
    FakeVfControl fake;
    std::string work;

private:
    static std::string make_workdir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "rdmanet-sriov-XXXXXX").string();
        if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp");
        return pattern;
    }
    // The test process's policy (allowing the temp dir for IPAM stores and device-info files)
    // with this bed's own state dir.
    static std::string write_policy(const std::string& dir) {
        nlohmann::json policy = nlohmann::json::object();
        if (const char* path = std::getenv("RDMANET_POLICY_FILE")) {
            std::ifstream in(path);
            policy = nlohmann::json::parse(in, nullptr, false);
            if (!policy.is_object()) policy = nlohmann::json::object();
        }
        policy["stateDir"] = dir + "/state";
        const std::string file = dir + "/policy.json";
        std::ofstream(file, std::ios::trunc) << policy.dump();
        return file;
    }

public:
    netns::Sysfs sysfs;
    std::string policy_file;
};

}  // namespace rdmanet::test::sriov
