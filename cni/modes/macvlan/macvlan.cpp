// mode "macvlan": a macvlan child of a host master, created directly inside the pod netns.
#include <random>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/modes/macvlan/mode.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/modes/master.hpp"
#include "rdmanet/netns/error.hpp"

namespace rdmanet::cni {

namespace {

netns::MacvlanMode parse_macvlan_mode(const std::string& mode) {
    if (mode == "private") return netns::MacvlanMode::private_;
    if (mode == "vepa") return netns::MacvlanMode::vepa;
    if (mode == "passthru") return netns::MacvlanMode::passthru;
    return netns::MacvlanMode::bridge;  // config validation already rejected anything else
}

// "master" of the configuration (find_master's error says how to fix it).
netns::LinkInfo macvlan_master(netns::Rtnl& host, const std::string& master) {
    return find_master(host, "macvlan", master, "set \"master\" to an existing interface (ip link show)");
}

}  // namespace

std::string temporary_link_name() {
    static std::mt19937 rng{std::random_device{}()};
    char name[16];
    std::snprintf(name, sizeof name, "rdm%08x", static_cast<unsigned>(rng()));
    return name;
}

PodLink macvlan_add(const AddRequest& req) {
    const auto& mv = req.conf.settings.get<MacvlanConf>();
    const auto master = macvlan_master(req.kernel.host, mv.master);
    admit_child(req, master, mv.mtu);

    netns::MacvlanSpec spec;
    spec.name = temporary_link_name();
    spec.master_index = master.index;
    spec.mode = parse_macvlan_mode(mv.mode);
    spec.mtu = mv.mtu;
    spec.mac = req.conf.requested_mac(req.env.args).value_or("");
    spec.target_netns_fd = req.kernel.pod_ns->fd();
    req.kernel.host.create_macvlan(spec);

    auto created = req.kernel.pod->link_by_name(spec.name);
    if (!created) throw Error(ErrorCode::kernel_failure, "macvlan " + spec.name + " vanished after creation");
    const int index = created->index;
    netns::Rtnl& pod = *req.kernel.pod;
    req.rollback.push("delete macvlan " + spec.name + " in the pod", [&pod, index] { pod.delete_link(index); });

    pod.rename_link(index, req.env.ifname);
    spdlog::info("created macvlan {} on master {} (mode {}) in {}", req.env.ifname, master.name, mv.mode,
                 req.env.netns);

    auto link = pod.link_by_index(index);
    if (!link) throw Error(ErrorCode::kernel_failure, "macvlan " + req.env.ifname + " vanished after rename");
    return PodLink{link->index, link->name, link->mac, link->mtu, ""};
}

void delete_pod_child(const DelRequest& req, std::string_view kind, std::string_view what) {
    if (!req.kernel.pod) return;  // netns gone: the kernel destroyed the child with it
    auto link = req.kernel.pod->link_by_name(req.env.ifname);
    if (!link) return;
    if (link->kind != kind) {
        spdlog::warn("{} in the pod is a {} link, not our {}: left alone", req.env.ifname,
                     link->kind.empty() ? "physical" : link->kind, what);
        return;
    }
    try {
        req.kernel.pod->delete_link(link->index);
    } catch (const netns::KernelError& e) {
        if (e.errno_value() != ENODEV) throw;
    }
    spdlog::info("deleted {} {}", what, req.env.ifname);
}

void macvlan_del(const DelRequest& req) { delete_pod_child(req, "macvlan", "macvlan"); }

void macvlan_check(const CheckRequest& req) {
    const NetConf& conf = req.conf;
    const Environment& env = req.env;
    Kernel& kernel = req.kernel;
    const Interface& expected = req.expected;
    const MacvlanConf& settings = conf.settings.get<MacvlanConf>();
    const auto master = macvlan_master(kernel.host, settings.master);
    auto link = kernel.pod->link_by_name(env.ifname);
    if (!link) throw Error(ErrorCode::device_not_found, "interface " + env.ifname + " not found in " + env.netns);
    if (link->kind != "macvlan")
        throw Error(ErrorCode::invalid_config, "interface " + env.ifname + " is not a macvlan");
    if (link->macvlan_mode != static_cast<int>(parse_macvlan_mode(settings.mode)))
        throw Error(ErrorCode::invalid_config,
                    "macvlan " + env.ifname + " mode differs from the configured " + settings.mode);
    if (!expected.mac.empty() && link->mac != expected.mac)
        throw Error(ErrorCode::invalid_config,
                    "interface " + env.ifname + " has MAC " + link->mac + ", expected " + expected.mac);
    (void)master;
}

}  // namespace rdmanet::cni
