// mode "sriov": an SR-IOV VF (Ethernet or InfiniBand) found by PCI address.
//
// ADD, in order, each change preceded by its undo on the rollback stack:
//   find the VF in sysfs -> validate the requested settings (nothing touched yet) -> per-VF lock
//   -> node policy -> claim the VF (in-use record) -> read and save the VF's PF-side settings
//   and netdev identity -> IB: GUID on the PF + driver rebind (node-wide lock) -> PF-side
//   settings (vlan, MAC verified, rate, spoofchk, trust, link_state) -> RDMA isolation hook ->
//   netdev into the pod (skipped for DPDK VFs) -> device-info file.
// DEL undoes exactly what the state says ADD did, best effort, and never touches a VF that has
// since been claimed by another attachment.
#include <algorithm>
#include <functional>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/protocol/value_checks.hpp"

#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/modes/device_policy.hpp"
#include "rdmanet/cni/policy/checks.hpp"
#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"
#include "rdmanet/cni/modes/sriov/mode.hpp"
#include "rdmanet/cni/modes/sriov/sriov.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/rdma_sysfs.hpp"
#include "netdev.hpp"

namespace rdmanet::cni {

namespace {

constexpr const char* kAllOnesGuid = "ff:ff:ff:ff:ff:ff:ff:ff";

// The injected VfControl, or the real rtnetlink one owned by the returned pointer (rollback
// steps keep it alive after sriov_add returns).
std::shared_ptr<netns::VfControl> vf_control(netns::VfControl* injected) {
    if (injected) return std::shared_ptr<netns::VfControl>(injected, [](netns::VfControl*) {});
    return netns::make_netlink_vf_control();
}

bool gone(const netns::KernelError& e) { return e.errno_value() == ENODEV || e.errno_value() == ENOENT; }

VfOwner owner_of(const AttachmentState& state) {
    return VfOwner{state.network, state.container_id, state.ifname, state.netns};
}

bool same_attachment(const VfOwner& a, const VfOwner& b) {
    return a.network == b.network && a.container_id == b.container_id && a.ifname == b.ifname;
}

// The node policy for a VF without a netdev (DPDK): mode and the devices allow-list by PCI.
void check_userspace_vf_policy(const NodePolicy& policy, const netns::Sysfs& sysfs, const VfDevice& vf) {
    check_mode_allowed(policy, "sriov");
    HostDevice device;
    device.link.name = vf.pci;
    device.pci_address = vf.pci;
    device.is_vf = true;
    device.vendor_id = pci_vendor_id(sysfs, vf.pci);
    if (auto mismatch = device_rules_mismatch(policy.devices, device, false); !mismatch.empty())
        refuse(policy, ErrorCode::invalid_config, mismatch + " (node policy, key devices)",
               "use a VF the node admin allows, or ask them to allow this one");
}

// Writes `guid` (node + port) and rebinds the VF so it takes effect. A rebind recreates the
// netdev, possibly under another name (ib-sriov-cni #51): the name is put back.
void apply_guid(netns::VfControl& vfs, const netns::Sysfs& sysfs, netns::Rtnl& host, const VfDevice& vf,
                const std::string& guid, const std::string& netdev_name) {
    set_vf_guid(vfs, vf.pf, vf.index, guid);
    rebind_vf(sysfs, vf.pci, vf.driver);
    if (vf.userspace || netdev_name.empty()) return;
    auto now = vf_netdev(sysfs, vf.pci);
    if (now && *now != netdev_name && !host.link_by_name(netdev_name)) {
        if (auto link = host.link_by_name(*now)) {
            spdlog::info("VF {} came back from the rebind as {}: renamed to {}", vf.pci, *now, netdev_name);
            host.rename_link(link->index, netdev_name);
        }
    }
}

// CHECK of an InfiniBand VF: the GUID this attachment asked for (or, when the runtime no longer
// passes it, the one ADD recorded) is still the VF's, as the PF reports it (node and port GUID)
// or, when the PF reports none, as the pod netdev's 20-byte IPoIB address ends.
void check_vf_guid(const CheckRequest& req, const VfDevice& vf, const netns::VfInfo& now) {
    const NetConf& conf = req.conf;
    const Environment& env = req.env;
    std::optional<std::string> expected = conf.settings.get<SriovConf>().requested_guid(conf.runtime, env.args);
    if (!expected) {
        const auto state = req.states.load(conf.name, env.container_id, env.ifname);
        if (state && state->mode_record.is_object())
            if (auto recorded = SriovState::from_json(state->mode_record).guid; !recorded.empty()) expected = recorded;
    }
    if (!expected) return;  // ADD kept the VF's own GUID: nothing of ours to verify
    const auto mismatch = [&](const std::string& what, const std::string& actual) {
        return Error(ErrorCode::invalid_config,
                     "InfiniBand VF " + vf.pci + " on " + vf.pf + " has " + what + " " + actual + ", expected " +
                         *expected + " (set by ADD)",
                     "something reset the VF's GUID (a driver reload, the subnet manager side or another tool); "
                     "delete and re-create the pod to set it again");
    };
    if (now.node_guid && netns::format_guid(*now.node_guid) != *expected)
        throw mismatch("node GUID", netns::format_guid(*now.node_guid));
    if (now.port_guid && netns::format_guid(*now.port_guid) != *expected)
        throw mismatch("port GUID", netns::format_guid(*now.port_guid));
    if (now.node_guid || now.port_guid) return;
    const auto link = vf.userspace ? std::nullopt : req.kernel.pod->link_by_name(env.ifname);
    const std::string from_address = current_guid(now, link ? link->mac : "");
    if (from_address.empty()) {
        spdlog::info("CHECK: the PF reports no GUID for VF {} and its netdev no IPoIB address: GUID not verified",
                     vf.pci);
        return;
    }
    if (from_address != *expected) throw mismatch("GUID", from_address);
}

}  // namespace

namespace {

// One VF on its way into a pod: what ADD's steps found and recorded so far (the steps follow
// sriov-cni's: fill the record from the device, apply the VF settings, set it up in the pod).
struct VfAttachment {
    const AddRequest& req;
    const SriovConf& conf;
    VfDevice vf;
    std::optional<std::string> mac;            // the MAC the network or CNI_ARGS ask for
    std::optional<std::string> guid;           // the GUID asked for (InfiniBand VFs)
    std::optional<netns::LinkInfo> host_link;  // the VF netdev in the host (none for DPDK)
    std::shared_ptr<netns::VfControl> vfs;
    SriovState record;

    // The record goes into the attachment state before every change it lists, so that a crash
    // right after the change still has DEL undo it.
    void save() const {
        req.state.mode_record = record.to_json();
        req.save_state();
    }
};

// Everything that can be refused from the config alone is refused before the VF is touched.
// Returns the PF-side changes the network asks for.
std::vector<netns::VfChange> refuse_unusable_config(const VfAttachment& a) {
    if (a.guid && !a.vf.infiniband)
        throw Error(ErrorCode::invalid_config,
                    "VF " + a.vf.pci + " is an Ethernet VF: a GUID applies to InfiniBand VFs",
                    "remove \"guid\" / runtimeConfig.infinibandGUID for this network");
    return plan_apply(a.conf, a.mac, a.vf.index, a.vf.infiniband);
}

// Takes the VF's lock and its in-use record. Ownership first: a VF another live pod holds is
// "busy" (102), whatever else is wrong with it. The release is pushed first, so it is the last
// undo: the VF stays ours (and locked) while it is restored.
void claim_vf(const VfAttachment& a) {
    const std::string& state_dir = a.req.policy.state_dir;
    const VfDevice& vf = a.vf;
    auto vf_lock = std::make_shared<FileLock>(
        FileLock::acquire(sriov_dir(state_dir) + "/vf_lock", vf.pci, kVfLockTimeout, "the lock of VF " + vf.pci));
    const InUseRecords records(state_dir);
    const VfOwner owner{a.req.conf.name, a.req.env.container_id, a.req.env.ifname, a.req.env.netns};
    records.claim(vf.pci, owner);
    a.req.rollback.push("release the record of VF " + vf.pci,
                        [records, pci = vf.pci, vf_lock] { records.remove(pci); });
}

// The node policy for the VF, and its netdev in the host (none for a DPDK VF).
std::optional<netns::LinkInfo> admit_vf(const VfAttachment& a) {
    const AddRequest& req = a.req;
    Kernel& kernel = req.kernel;
    const VfDevice& vf = a.vf;
    if (vf.userspace) {
        check_userspace_vf_policy(req.policy, kernel.sysfs, vf);
        return std::nullopt;
    }
    if (!vf.netdev) throw missing_netdev_error(vf);
    auto host_link = kernel.host.link_by_name(*vf.netdev);
    if (!host_link)
        throw Error(ErrorCode::device_not_found,
                    "VF netdev " + *vf.netdev + " of " + vf.pci + " is not in the host namespace",
                    "it may be attached to another pod");
    check_device_move(req.policy, kernel.host, kernel.sysfs, *host_link, "sriov", req.states,
                      AttachmentKey{req.env.container_id, req.env.ifname});
    return host_link;
}

// Fill the record from the device: the VF's PF-side settings and netdev identity as they are
// before ADD changes anything, saved in the attachment state.
void record_vf_as_found(VfAttachment& a) {
    const VfDevice& vf = a.vf;
    SriovState& s = a.record;
    s.pf = vf.pf;
    s.pf_pci = vf.pf_pci;
    s.vf_index = static_cast<int>(vf.index);
    s.dpdk = vf.userspace;
    s.infiniband = vf.infiniband;
    s.driver = vf.driver;
    s.original = a.vfs->get(vf.pf, vf.index);
    s.pkey = a.conf.pkey;
    AttachmentState& state = a.req.state;
    if (a.host_link) {
        state.host_ifname = a.host_link->name;
        state.host_mac = a.host_link->mac;
        state.host_was_up = a.host_link->up;
        state.host_alias = a.host_link->alias;
        s.original_mtu = a.host_link->mtu;
    }
    state.pci_address = vf.pci;
    a.save();
}

// InfiniBand: the GUID asked for, set on the PF with a driver rebind (one at a time on the node:
// rebinding renames devices node-wide); without one, the VF's own GUID must be usable.
void apply_vf_guid(VfAttachment& a) {
    const VfDevice& vf = a.vf;
    if (!vf.infiniband) return;
    Kernel& kernel = a.req.kernel;
    SriovState& s = a.record;
    const std::string current = current_guid(s.original, a.host_link ? a.host_link->mac : "");
    if (!a.guid) {
        if (current.empty() || is_reserved_guid(current))
            throw Error(
                ErrorCode::invalid_config,
                "InfiniBand VF " + vf.pci + " has no usable GUID (" + (current.empty() ? "unknown" : current) + ")",
                "pass one (runtimeConfig.infinibandGUID from ib-kubernetes, CNI_ARGS guid, or \"guid\") "
                "or assign the VF a GUID on the node");
        return;
    }
    if (*a.guid == current) return;
    FileLock guid_lock =
        FileLock::acquire(sriov_dir(a.req.policy.state_dir), "guid", kGuidLockTimeout, "the node-wide GUID lock");
    s.original_guid = current.empty() || current == "00:00:00:00:00:00:00:00" ? kAllOnesGuid : current;
    s.guid = *a.guid;
    s.applied.push_back("guid");
    a.save();
    const std::string name = a.host_link ? a.host_link->name : "";
    a.req.rollback.push("restore GUID of VF " + vf.pci,
                        [vfs = a.vfs, &sysfs = kernel.sysfs, &host = kernel.host, vf, original = s.original_guid,
                         name] { apply_guid(*vfs, sysfs, host, vf, original, name); });
    apply_guid(*a.vfs, kernel.sysfs, kernel.host, vf, *a.guid, name);
    if (a.host_link) {
        a.host_link = kernel.host.link_by_name(a.host_link->name);
        if (!a.host_link)
            throw Error(ErrorCode::device_not_found, "VF " + vf.pci + " has no netdev after the driver rebind");
    }
    spdlog::info("VF {}: GUID {} set (was {})", vf.pci, *a.guid, s.original_guid);
}

// Apply the VF settings on the PF side (vlan, MAC verified, rate, spoofchk, trust, link_state),
// each recorded before its write: a crash right after it still has DEL restore that field.
void apply_vf_settings(VfAttachment& a, const std::vector<netns::VfChange>& plan) {
    const VfDevice& vf = a.vf;
    for (const auto& change : plan) {
        const std::string field = field_name(change.field);
        a.record.applied.push_back(field);
        a.save();
        a.req.rollback.push("restore VF " + std::to_string(vf.index) + " " + field + " on " + vf.pf,
                            [vfs = a.vfs, pf = vf.pf, field, original = a.record.original, index = vf.index] {
                                if (auto undo = restore_change(field, original, index)) vfs->apply(pf, *undo);
                            });
        apply_verified(*a.vfs, vf.pf, change);
    }
}

// Set up in the pod: the netdev moves in under CNI_IFNAME; a DPDK VF has none, nothing moves and
// the result names the VF by its admin MAC (sriov-cni).
PodLink setup_in_pod(const VfAttachment& a) {
    const VfDevice& vf = a.vf;
    PodLink pod_link;
    pod_link.pci_id = vf.pci;
    if (vf.userspace) {
        const auto now = a.vfs->get(vf.pf, vf.index);
        pod_link.name = a.req.env.ifname;
        pod_link.userspace = true;
        if (now.mac != "00:00:00:00:00:00") pod_link.mac = now.mac;
        spdlog::info("VF {} is bound to {}: DPDK mode, no netdev moved", vf.pci, vf.driver);
        return pod_link;
    }
    NetdevPlan plan_netdev{*a.host_link, a.req.env.ifname, a.conf.mtu, vf.infiniband ? std::nullopt : a.mac};
    const auto link = move_into_pod(a.req, plan_netdev);
    pod_link.index = link.index;
    pod_link.name = link.name;
    pod_link.mac = link.mac;
    pod_link.mtu = link.mtu;
    return pod_link;
}

// Multus' device-info file, when the runtime asked for one: the VF, its PF and the RDMA device
// the pod owns (or, without isolation, the function's).
void write_vf_device_info(VfAttachment& a) {
    const AddRequest& req = a.req;
    if (!req.conf.runtime.device_info_file || req.conf.runtime.device_info_file->empty()) return;
    const std::string path = *req.conf.runtime.device_info_file;
    std::string rdma = req.state.rdma_device_in_pod();
    if (rdma.empty()) {
        const auto devices = netns::pci_rdma_devices(req.kernel.sysfs, a.vf.pci);
        if (!devices.empty()) rdma = devices.front();
    }
    const auto& dirs = req.policy.device_info_dirs;
    req.rollback.push("remove device-info file " + path, [path, dirs] { remove_device_info(dirs, path); });
    write_device_info(dirs, path, a.vf.pci, a.vf.pf_pci, rdma);
    a.record.device_info_file = path;
    a.save();
}

}  // namespace

PodLink sriov_add(const AddRequest& req) {
    const SriovConf& conf = req.conf.settings.get<SriovConf>();
    VfAttachment a{req,
                   conf,
                   find_vf(req.kernel.sysfs, conf.pci_address, /*require_netdev=*/false),
                   req.conf.requested_mac(req.env.args),
                   conf.requested_guid(req.conf.runtime, req.env.args),
                   std::nullopt,
                   nullptr,
                   SriovState{}};
    const auto plan = refuse_unusable_config(a);
    claim_vf(a);
    a.host_link = admit_vf(a);
    a.vfs = vf_control(req.kernel.services.vf);
    record_vf_as_found(a);
    apply_vf_guid(a);
    apply_vf_settings(a, plan);
    // The RDMA device: after any GUID rebind (new name), before the netdev moves.
    rdma_isolation_add(req, RdmaFunction{a.vf.pci, a.host_link ? a.host_link->name : ""});
    const PodLink pod_link = setup_in_pod(a);
    write_vf_device_info(a);
    return pod_link;
}

void sriov_del(const DelRequest& req) {
    if (!req.state || !req.state->mode_record.is_object() || req.state->pci_address.empty()) {
        spdlog::info("sriov DEL without a recorded VF: nothing to undo");
        return;
    }
    const AttachmentState& state = *req.state;
    const SriovState s = SriovState::from_json(state.mode_record);
    const std::string& state_dir = req.policy.state_dir;
    FileLock lock = FileLock::acquire(sriov_dir(state_dir) + "/vf_lock", state.pci_address, kVfLockTimeout,
                                      "the lock of VF " + state.pci_address);

    const InUseRecords records(state_dir);
    const auto holder = records.read(state.pci_address);
    if (holder && !same_attachment(*holder, owner_of(state))) {
        // The VF now belongs to another attachment (this DEL is late): restoring it would break
        // that pod (sriov-cni #219). Only our own leftovers are cleaned.
        spdlog::warn("VF {} is now held by container {}: left as it is", state.pci_address, holder->container_id);
        remove_device_info(req.policy.device_info_dirs, s.device_info_file);
        return;
    }

    std::vector<std::string> failures;
    auto step = [&](const std::string& what, const std::function<void()>& fn) {
        try {
            fn();
        } catch (const netns::KernelError& e) {
            if (gone(e)) {
                spdlog::info("{}: already gone ({})", what, e.what());
                return;
            }
            failures.push_back(what + ": " + e.what());
        } catch (const std::exception& e) {
            failures.push_back(what + ": " + e.what());
        }
    };

    if (!s.dpdk) step("return the VF netdev", [&] { return_to_host(req, state, s); });
    step("return the RDMA device", [&] { rdma_isolation_del(req); });

    auto vfs = vf_control(req.kernel.services.vf);
    for (auto it = s.applied.rbegin(); it != s.applied.rend(); ++it) {
        if (*it == "guid") continue;
        const std::string field = *it;
        step("restore VF " + field, [&] {
            if (auto undo = restore_change(field, s.original, static_cast<unsigned>(s.vf_index)))
                vfs->apply(s.pf, *undo);
        });
    }
    if (std::find(s.applied.begin(), s.applied.end(), "guid") != s.applied.end()) {
        step("restore the VF GUID", [&] {
            FileLock guid_lock =
                FileLock::acquire(sriov_dir(state_dir), "guid", kGuidLockTimeout, "the node-wide GUID lock");
            VfDevice vf;
            vf.pci = state.pci_address;
            vf.pf = s.pf;
            vf.index = static_cast<unsigned>(s.vf_index);
            vf.driver = s.driver;
            vf.userspace = s.dpdk;
            apply_guid(*vfs, req.kernel.sysfs, req.kernel.host, vf,
                       s.original_guid.empty() ? kAllOnesGuid : s.original_guid, s.dpdk ? "" : state.host_ifname);
        });
    }
    remove_device_info(req.policy.device_info_dirs, s.device_info_file);
    if (!failures.empty()) {
        std::string msg = "VF " + state.pci_address + " not fully restored: ";
        for (std::size_t i = 0; i < failures.size(); ++i) msg += (i ? "; " : "") + failures[i];
        throw Error(ErrorCode::try_again, msg);  // the record stays: the retry is still ours
    }
    records.remove(state.pci_address);
}

void sriov_check(const CheckRequest& req) {
    const NetConf& conf = req.conf;
    const Environment& env = req.env;
    Kernel& kernel = req.kernel;
    const Interface& expected = req.expected;
    // The VF's netdev is in the pod now: the host's sysfs no longer lists it under the PCI device
    // (net/ is namespaced), so it is not required here; the pod side is checked below.
    const SriovConf& settings = conf.settings.get<SriovConf>();
    const VfDevice vf = find_vf(kernel.sysfs, settings.pci_address, /*require_netdev=*/false);
    if (!vf.userspace) {
        auto link = kernel.pod->link_by_name(env.ifname);
        if (!link) throw Error(ErrorCode::device_not_found, "interface " + env.ifname + " not found in " + env.netns);
        if (!expected.mac.empty() && link->mac != checks::lowercase(expected.mac))
            throw Error(ErrorCode::invalid_config,
                        "interface " + env.ifname + " has MAC " + link->mac + ", expected " + expected.mac);
        if (settings.mtu != 0 && link->mtu != settings.mtu)
            throw Error(ErrorCode::invalid_config, "interface " + env.ifname + " has MTU " + std::to_string(link->mtu) +
                                                       ", expected " + std::to_string(settings.mtu));
    }
    // The PF-side settings this network asks for must still hold.
    auto vfs = vf_control(kernel.services.vf);
    const auto now = vfs->get(vf.pf, vf.index);
    for (const auto& change : plan_apply(settings, conf.requested_mac(env.args), vf.index, vf.infiniband))
        if (!reflects(now, change))
            throw Error(ErrorCode::invalid_config,
                        "VF " + vf.pci + " on " + vf.pf + " no longer has " + change.describe());
    if (vf.infiniband) check_vf_guid(req, vf, now);
}

}  // namespace rdmanet::cni
