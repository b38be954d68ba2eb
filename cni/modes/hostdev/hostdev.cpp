// mode "hostdev": move an existing host netdev into the pod and back, one netns move per direction.
#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/modes/hostdev/mode.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/modes/device_policy.hpp"
#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"
#include "rdmanet/cni/modes/sriov/sriov.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/rdma_sysfs.hpp"

namespace rdmanet::cni {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

std::string first_or_throw(const std::vector<std::string>& names, const std::string& what) {
    if (names.empty())
        throw Error(ErrorCode::device_not_found, what + " has no network interface",
                    "the device may be bound to a userspace driver or not exist on this node");
    return names.front();
}

// Selector precedence as the reference host-device plugin: device > hwaddr > kernelpath > PCI/aux.
netns::LinkInfo resolve_device(const HostdevConf& conf, netns::Rtnl& host, const netns::Sysfs& sysfs) {
    std::string name;
    if (!conf.device.empty()) {
        name = conf.device;
    } else if (!conf.hwaddr.empty()) {
        const std::string wanted = lower(conf.hwaddr);
        for (const auto& link : host.links())
            if (link.mac == wanted) return link;
        throw Error(ErrorCode::device_not_found, "no host interface has MAC " + conf.hwaddr, "check \"hwaddr\"");
    } else if (!conf.kernelpath.empty()) {
        name = first_or_throw(sysfs.kernelpath_netdevs(conf.kernelpath), "kernelpath " + conf.kernelpath);
    } else if (sysfs.pci_device_exists(conf.pci_address)) {
        name = first_or_throw(sysfs.pci_netdevs(conf.pci_address), "PCI device " + conf.pci_address);
    } else if (sysfs.aux_device_exists(conf.pci_address)) {
        name = first_or_throw(sysfs.aux_netdevs(conf.pci_address), "auxiliary device " + conf.pci_address);
    } else {
        throw Error(ErrorCode::device_not_found,
                    "device " + conf.pci_address + " is neither a PCI nor an auxiliary device on this node",
                    "check deviceID/pciBusID and the device plugin's resource");
    }
    auto link = host.link_by_name(name);
    if (!link)
        throw Error(ErrorCode::device_not_found, "device \"" + name + "\" does not exist in the host network namespace",
                    "it may already be attached to another pod");
    return *link;
}

// The device as the kernel hands it back when a pod netns dies without DEL: in the host, under
// its pod name or dev<N>, alias still holding the host name. Identified by PCI address when known,
// else by MAC plus our alias.
std::optional<netns::LinkInfo> find_returned_device(const AttachmentState& state, netns::Rtnl& host,
                                                    const netns::Sysfs& sysfs) {
    for (const auto& link : host.links()) {
        if (!state.pci_address.empty()) {
            if (sysfs.netdev_pci_address(link.name) == state.pci_address) return link;
            continue;
        }
        if (!state.host_mac.empty() && link.mac == state.host_mac && link.alias == state.host_ifname) return link;
    }
    return std::nullopt;
}

void restore_host_side(netns::Rtnl& host, const netns::LinkInfo& link, const std::string& original_name,
                       const std::string& original_alias, bool was_up) {
    int index = link.index;
    if (link.name != original_name) {
        if (host.link_by_name(original_name)) {
            spdlog::warn("cannot rename {} back to {}: the name is taken; left as {}", link.name, original_name,
                         link.name);
        } else {
            if (link.up) host.set_up(index, false);  // the kernel refuses to rename a running link
            host.rename_link(index, original_name);
        }
    }
    host.set_alias(index, original_alias);
    if (was_up) host.set_up(index, true);
}

// The PF's PCI address when `pci` is an SR-IOV VF (basename of its physfn link), else "".
std::string pf_pci_of(const netns::Sysfs& sysfs, const std::string& pci) {
    std::error_code ec;
    const auto pf =
        std::filesystem::canonical(std::filesystem::path(sysfs.root()) / "bus/pci/devices" / pci / "physfn", ec);
    return ec ? std::string() : pf.filename().string();
}

// Multus' device-info file, when the runtime asked for one and the device is a
// PCI netdev: type pci, its address, the PF's for a VF, and the RDMA device the pod owns (or,
// without isolation, the function's). A device without a PCI function (virtual, auxiliary SF)
// gets none: the spec's "pci" type would misdescribe it.
void write_hostdev_device_info(const AddRequest& req) {
    const auto& file = req.conf.runtime.device_info_file;
    if (!file || file->empty()) return;
    const std::string& pci = req.state.pci_address;
    if (pci.empty() || !req.kernel.sysfs.pci_device_exists(pci)) {
        spdlog::info("device-info file {} not written: {} is not a PCI function", *file, req.state.host_ifname);
        return;
    }
    std::string rdma = req.state.rdma_device_in_pod();
    if (rdma.empty()) {
        const auto devices = netns::pci_rdma_devices(req.kernel.sysfs, pci);
        if (!devices.empty()) rdma = devices.front();
    }
    const std::string path = *file;
    const auto& dirs = req.policy.device_info_dirs;
    req.rollback.push("remove device-info file " + path, [path, dirs] { remove_device_info(dirs, path); });
    write_device_info(dirs, path, pci, pf_pci_of(req.kernel.sysfs, pci), rdma);
}

}  // namespace

PodLink hostdev_add(const AddRequest& req) {
    auto& host = req.kernel.host;
    const auto dev = resolve_device(req.conf.settings.get<HostdevConf>(), host, req.kernel.sysfs);
    // Node policy and built-in protections (loopback, the node's uplink, a device another pod
    // holds), before anything about the device changes.
    check_device_move(req.policy, host, req.kernel.sysfs, dev, req.conf.mode, req.states,
                      AttachmentKey{req.env.container_id, req.env.ifname});

    req.state.host_ifname = dev.name;
    req.state.host_mac = dev.mac;
    req.state.host_was_up = dev.up;
    req.state.host_alias = dev.alias;
    req.state.pci_address = req.kernel.sysfs.netdev_pci_address(dev.name).value_or("");
    req.save_state();

    // RDMA device first: moving it recreates its IPoIB netdevs in the host namespace.
    const auto& configured = req.conf.settings.get<HostdevConf>().pci_address;
    const auto& function_id = configured.empty() ? req.state.pci_address : configured;
    rdma_isolation_add(req, RdmaFunction{function_id, dev.name});

    // The alias records the host name on the device itself, so it can be found and returned even
    // without our state file (kept through netns moves and a netns' destruction).
    host.set_alias(dev.index, dev.name);
    req.rollback.push("restore alias of " + dev.name, [&host, dev] { host.set_alias(dev.index, dev.alias); });

    // One RTM_SETLINK moves the device and renames it inside the pod: the kernel changes the
    // namespace first (which also takes the link down), then the name. The target name was
    // checked free by the plugin, but the pair is not atomic: if the name got taken meanwhile, the
    // kernel moves the device and then fails the rename, leaving it in the pod under its host
    // name. The undo is therefore pushed before the move and looks for the device under either
    // name.
    netns::Rtnl& pod = *req.kernel.pod;
    const int host_fd = req.kernel.host_ns.fd();
    const std::string pod_name = req.env.ifname;
    req.rollback.push("move " + pod_name + " back to the host as " + dev.name, [&pod, &host, host_fd, pod_name, dev] {
        auto in_pod = pod.link_by_name(pod_name);
        if (!in_pod || in_pod->alias != dev.name) in_pod = pod.link_by_name(dev.name);
        if (!in_pod) return;  // the move never happened
        pod.move_link(in_pod->index, host_fd, dev.name);
        if (dev.up) {
            if (auto back = host.link_by_name(dev.name)) host.set_up(back->index, true);
        }
    });
    host.move_link(dev.index, req.kernel.pod_ns->fd(), pod_name);
    auto link = pod.link_by_name(pod_name);
    if (!link) throw Error(ErrorCode::kernel_failure, "device " + dev.name + " not found in the pod after the move");
    spdlog::info("moved {} into {} as {}", dev.name, req.env.netns, req.env.ifname);
    write_hostdev_device_info(req);
    return PodLink{link->index, link->name, link->mac, link->mtu, req.state.pci_address};
}

namespace {

void return_netdev(const DelRequest& req) {
    const AttachmentState* state = req.state ? &*req.state : nullptr;
    if (req.kernel.pod) {
        if (auto link = req.kernel.pod->link_by_name(req.env.ifname)) {
            const std::string original = state && !state->host_ifname.empty() ? state->host_ifname : link->alias;
            if (original.empty()) {
                spdlog::warn("{} in the pod carries no host name: not ours, left alone", req.env.ifname);
                return;
            }
            // Return under the original name when it is free, else under a temporary one that
            // cannot clash, then restore what we can in the host.
            const bool name_free = !req.kernel.host.link_by_name(original);
            const std::string transit = name_free ? original : temporary_link_name();
            req.kernel.pod->move_link(link->index, req.kernel.host_ns.fd(), transit);
            spdlog::info("returned {} to the host as {}", req.env.ifname, transit);
            if (auto back = req.kernel.host.link_by_name(transit))
                restore_host_side(req.kernel.host, *back, original, state ? state->host_alias : "",
                                  state ? state->host_was_up : false);
            return;
        }
    }
    if (!state || state->host_ifname.empty()) return;  // nothing known to recover
    // Not in the pod: the kernel may have returned it already (netns destroyed), possibly renamed.
    if (auto returned = find_returned_device(*state, req.kernel.host, req.kernel.sysfs)) {
        if (returned->name == state->host_ifname && returned->alias == state->host_alias) return;
        spdlog::info("recovering {} returned by the kernel as {}", state->host_ifname, returned->name);
        restore_host_side(req.kernel.host, *returned, state->host_ifname, state->host_alias, state->host_was_up);
    }
}

}  // namespace

void hostdev_del(const DelRequest& req) {
    return_netdev(req);
    rdma_isolation_del(req);  // after the netdev, the reverse of ADD
}

void hostdev_check(const CheckRequest& req) {
    const Environment& env = req.env;
    Kernel& kernel = req.kernel;
    const Interface& expected = req.expected;
    auto link = kernel.pod->link_by_name(env.ifname);
    if (!link) throw Error(ErrorCode::device_not_found, "interface " + env.ifname + " not found in " + env.netns);
    if (link->alias.empty())
        throw Error(ErrorCode::invalid_config, "interface " + env.ifname + " carries no host name alias");
    if (!expected.mac.empty() && link->mac != lower(expected.mac))
        throw Error(ErrorCode::invalid_config,
                    "interface " + env.ifname + " has MAC " + link->mac + ", expected " + expected.mac);
}

}  // namespace rdmanet::cni
