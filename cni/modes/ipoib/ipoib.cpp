// mode "ipoib": an IPoIB child of an InfiniBand parent, as ipoib-cni makes it. Created in
// the host namespace under a temporary name (creating it directly in the pod's namespace hit a
// kernel bug, ipoib-cni), then moved and renamed by one RTM_SETLINK.
#include <spdlog/spdlog.h>

#include "rdmanet/cni/modes/ipoib/mode.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/modes/master.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/ipoib.hpp"

namespace rdmanet::cni {

namespace {

constexpr unsigned kArphrdInfiniband = 32;

// "master" of the configuration (find_master's error says how to fix it).
netns::LinkInfo ipoib_master(netns::Rtnl& host, const std::string& master) {
    return find_master(host, "IPoIB", master,
                       "set \"master\" to the InfiniBand interface (ip -d link show type ipoib; e.g. \"ib0\")");
}

netns::IpoibParentInfo read_parent(const netns::Sysfs& sysfs, const std::string& master) {
    auto parent = netns::read_ipoib_parent(sysfs, master);
    if (!parent || !parent->is_infiniband())
        throw Error(ErrorCode::invalid_config,
                    "master \"" + master + "\" is not an InfiniBand (IPoIB) interface" +
                        (parent ? " (link type " + std::to_string(parent->type) + ", expected " +
                                      std::to_string(kArphrdInfiniband) + ")"
                                : ""),
                    "mode \"ipoib\" needs an IPoIB parent such as ib0; use mode \"macvlan\" on Ethernet");
    return *parent;
}

// ipoib-cni's defaults: the parent's 15-bit key (the kernel sets the membership bit again) and
// the parent's mode (hard-coding datagram broke Omni-Path, ipoib-cni PR #29).
netns::IpoibSpec child_spec(const IpoibConf& conf, const netns::IpoibParentInfo& parent, int parent_index) {
    netns::IpoibSpec spec;
    spec.name = temporary_link_name();
    spec.parent_index = parent_index;
    spec.pkey = static_cast<std::uint16_t>(conf.pkey ? *conf.pkey : (parent.pkey.value_or(0xffff) & 0x7fff));
    spec.mode = conf.mode ? netns::parse_ipoib_mode(*conf.mode).value_or(netns::IpoibMode::datagram)
                          : parent.mode.value_or(netns::IpoibMode::datagram);
    spec.umcast = true;
    return spec;
}

}  // namespace

PodLink ipoib_add(const AddRequest& req) {
    const IpoibConf& conf = req.conf.settings.get<IpoibConf>();
    netns::Rtnl& host = req.kernel.host;
    const auto master = ipoib_master(host, conf.master);
    admit_child(req, master, conf.mtu);
    const auto parent = read_parent(req.kernel.sysfs, master.name);

    std::unique_ptr<netns::IpoibLinks> owned;
    netns::IpoibLinks* links = req.kernel.services.ipoib;
    if (!links) {
        owned = netns::open_ipoib_links();  // in the plugin's (host) namespace
        links = owned.get();
    }
    const auto spec = child_spec(conf, parent, master.index);
    req.state.child_kind = links->kind();
    // Saved before the child exists: after a crash from here on, DEL and GC find the attachment
    // (and the kind of link that is ours) instead of guessing.
    req.save_state();

    // The undo looks for the child under both names: the move+rename may have happened or not.
    netns::Rtnl& pod = *req.kernel.pod;
    const std::string pod_name = req.env.ifname;
    const std::string kind = links->kind();
    req.rollback.push("delete IPoIB child " + spec.name, [&host, &pod, pod_name, spec, kind] {
        if (auto in_pod = pod.link_by_name(pod_name); in_pod && in_pod->kind == kind) {
            pod.delete_link(in_pod->index);
        } else if (auto in_host = host.link_by_name(spec.name); in_host && in_host->kind == kind) {
            host.delete_link(in_host->index);
        }
    });
    links->create(spec);
    auto created = host.link_by_name(spec.name);
    if (!created) throw Error(ErrorCode::kernel_failure, "IPoIB child " + spec.name + " vanished after creation");
    spdlog::info("created IPoIB child {} of {} (pkey {:#06x}, {})", spec.name, master.name, spec.pkey | 0x8000,
                 netns::ipoib_mode_name(spec.mode));

    host.move_link(created->index, req.kernel.pod_ns->fd(), pod_name);
    auto link = pod.link_by_name(pod_name);
    if (!link)
        throw Error(ErrorCode::kernel_failure, "IPoIB child " + spec.name + " not found in the pod after the move");
    if (conf.mtu) pod.set_mtu(link->index, conf.mtu);
    // As ipoib-cni: answer ARP for the partition's other members on this child.
    netns::in_netns(*req.kernel.pod_ns, [&] { netns::write_sysctl("net/ipv4/conf/" + pod_name + "/proxy_arp", "1"); });
    link = pod.link_by_index(link->index);
    if (!link) throw Error(ErrorCode::kernel_failure, "IPoIB child " + pod_name + " vanished in the pod");
    spdlog::info("moved IPoIB child {} into {} as {}", spec.name, req.env.netns, pod_name);
    return PodLink{link->index, link->name, link->mac, link->mtu, ""};
}

void ipoib_del(const DelRequest& req) {
    // The stand-in kind recorded at ADD (tests), else the kernel's "ipoib".
    const std::string kind = req.state && !req.state->child_kind.empty() ? req.state->child_kind : "ipoib";
    delete_pod_child(req, kind, "IPoIB child");
}

void ipoib_check(const CheckRequest& req) {
    const NetConf& conf = req.conf;
    const Environment& env = req.env;
    Kernel& kernel = req.kernel;
    const Interface& expected = req.expected;
    ipoib_master(kernel.host, conf.settings.get<IpoibConf>().master);
    auto link = kernel.pod->link_by_name(env.ifname);
    if (!link) throw Error(ErrorCode::device_not_found, "interface " + env.ifname + " not found in " + env.netns);
    const std::string kind = kernel.services.ipoib ? kernel.services.ipoib->kind() : "ipoib";
    if (link->kind != kind)
        throw Error(ErrorCode::invalid_config,
                    "interface " + env.ifname + " is not an IPoIB child (kind \"" + link->kind + "\")");
    if (!expected.mac.empty() && link->mac != expected.mac)
        throw Error(ErrorCode::invalid_config,
                    "interface " + env.ifname + " has MAC " + link->mac + ", expected " + expected.mac);
}

}  // namespace rdmanet::cni
