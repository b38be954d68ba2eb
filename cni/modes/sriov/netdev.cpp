// The VF netdev's way into the pod and back. One RTM_SETLINK per direction moves and renames
// (a netns move costs ~20 ms of RCU wall time, so never two); the host name rides along as
// the link's alias so the device can be recognised wherever the kernel leaves it.
#include <thread>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/netns/error.hpp"
#include "netdev.hpp"

namespace rdmanet::cni {

namespace {

// Some drivers apply a netdev MAC asynchronously; sriov-cni verifies 20 x 100 ms.
void set_mac_verified(netns::Rtnl& rtnl, const std::string& name, const std::string& mac) {
    auto link = rtnl.link_by_name(name);
    if (!link) throw Error(ErrorCode::device_not_found, "interface " + name + " vanished while setting its MAC");
    rtnl.set_mac(link->index, mac);
    for (int i = 0; i < 20; ++i) {
        link = rtnl.link_by_name(name);
        if (link && link->mac == mac) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw Error(ErrorCode::kernel_failure, "interface " + name + " does not take MAC " + mac,
                "the VF driver refused it; with trust off some drivers only accept the PF-side admin MAC");
}

// In the host: the original name back (when free), the pod name dropped as an altname, MAC,
// MTU and alias as before ADD, UP if it was.
void restore_in_host(netns::Rtnl& host, netns::LinkInfo link, const AttachmentState& state, const SriovState& s,
                     const std::string& pod_name) {
    if (link.up) host.set_up(link.index, false);  // the kernel refuses to rename a running link
    if (link.name != state.host_ifname) {
        if (auto other = host.link_by_name(state.host_ifname); other && other->index != link.index)
            spdlog::warn("cannot rename {} back to {}: the name is taken; left as {}", link.name, state.host_ifname,
                         link.name);
        else
            host.rename_link(link.index, state.host_ifname);
    }
    if (pod_name != state.host_ifname) host.delete_altname(link.index, pod_name);
    if (!state.host_mac.empty() && link.mac != state.host_mac) host.set_mac(link.index, state.host_mac);
    if (s.original_mtu != 0 && link.mtu != s.original_mtu) host.set_mtu(link.index, s.original_mtu);
    host.set_alias(link.index, state.host_alias);
    if (state.host_was_up) host.set_up(link.index, true);
}

}  // namespace

netns::LinkInfo move_into_pod(const AddRequest& req, const NetdevPlan& plan) {
    netns::Rtnl& host = req.kernel.host;
    netns::Rtnl& pod = *req.kernel.pod;
    const netns::LinkInfo dev = plan.host;
    const std::string pod_name = plan.pod_name;
    const int host_fd = req.kernel.host_ns.fd();

    host.set_alias(dev.index, dev.name);
    req.rollback.push("restore alias of " + dev.name, [&host, dev] {
        if (auto link = host.link_by_name(dev.name)) host.set_alias(link->index, dev.alias);
    });
    // Pushed before the move: if the rename half fails, the link is in the pod under its host name.
    req.rollback.push("return " + pod_name + " to the host as " + dev.name, [&pod, &host, host_fd, pod_name, dev] {
        auto in_pod = pod.link_by_name(pod_name);
        if (!in_pod || in_pod->alias != dev.name) in_pod = pod.link_by_name(dev.name);
        if (!in_pod) return;  // never moved
        if (in_pod->up) pod.set_up(in_pod->index, false);
        if (!dev.mac.empty() && in_pod->mac != dev.mac) pod.set_mac(in_pod->index, dev.mac);
        if (in_pod->mtu != dev.mtu) pod.set_mtu(in_pod->index, dev.mtu);
        pod.move_link(in_pod->index, host_fd, dev.name);
        if (auto back = host.link_by_name(dev.name)) {
            host.delete_altname(back->index, pod_name);
            if (dev.up) host.set_up(back->index, true);
        }
    });
    host.move_link(dev.index, req.kernel.pod_ns->fd(), pod_name);
    auto link = pod.link_by_name(pod_name);
    if (!link) throw Error(ErrorCode::kernel_failure, "VF netdev " + dev.name + " not found in the pod after the move");
    // Kernels that keep the previous name as an altname would make the next ADD of this VF fail
    // with EEXIST (sriov-cni #445).
    pod.delete_altname(link->index, dev.name);
    if (plan.mtu != 0 && plan.mtu != link->mtu) pod.set_mtu(link->index, plan.mtu);
    if (plan.mac && *plan.mac != link->mac) set_mac_verified(pod, pod_name, *plan.mac);
    spdlog::info("moved VF netdev {} into {} as {}", dev.name, req.env.netns, pod_name);
    return *pod.link_by_name(pod_name);
}

void return_to_host(const DelRequest& req, const AttachmentState& state, const SriovState& record) {
    const std::string& pod_name = req.env.ifname;
    if (req.kernel.pod) {
        if (auto link = req.kernel.pod->link_by_name(pod_name)) {
            if (link->alias != state.host_ifname) {
                spdlog::warn("{} in the pod does not carry the VF's host name {} (alias \"{}\"): not ours, left alone",
                             pod_name, state.host_ifname, link->alias);
                return;
            }
            netns::Rtnl& pod = *req.kernel.pod;
            if (link->up) pod.set_up(link->index, false);
            // Effective MAC back before the netdev leaves: the PF-side admin MAC is restored later.
            if (!state.host_mac.empty() && link->mac != state.host_mac) pod.set_mac(link->index, state.host_mac);
            const bool name_free = !req.kernel.host.link_by_name(state.host_ifname);
            const std::string transit = name_free ? state.host_ifname : temporary_link_name();
            pod.move_link(link->index, req.kernel.host_ns.fd(), transit);
            spdlog::info("returned {} to the host as {}", pod_name, transit);
            if (auto back = req.kernel.host.link_by_name(transit))
                restore_in_host(req.kernel.host, *back, state, record, pod_name);
            return;
        }
    }
    // Not in the pod: the kernel hands a physical netdev back when its netns dies, under its pod
    // name or dev<N>. Find it by PCI address.
    auto names = req.kernel.sysfs.pci_netdevs(state.pci_address);
    if (names.empty()) {
        spdlog::info("VF {} has no netdev in the host: nothing to return", state.pci_address);
        return;
    }
    auto link = req.kernel.host.link_by_name(names.front());
    if (!link) return;
    const bool settled = link->name == state.host_ifname && link->alias == state.host_alias &&
                         (state.host_mac.empty() || link->mac == state.host_mac);
    if (settled) return;
    spdlog::info("recovering VF netdev {} returned by the kernel as {}", state.host_ifname, link->name);
    restore_in_host(req.kernel.host, *link, state, record, pod_name);
}

}  // namespace rdmanet::cni
