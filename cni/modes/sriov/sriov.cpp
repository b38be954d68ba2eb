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

using namespace sriov;

namespace {

constexpr const char* kAllOnesGuid = "ff:ff:ff:ff:ff:ff:ff:ff";

// The injected VfControl, or the real rtnetlink one owned by the returned pointer (rollback
// steps keep it alive after sriov_add returns).
std::shared_ptr<netns::VfControl> vf_control(netns::VfControl* injected) {
    if (injected) return std::shared_ptr<netns::VfControl>(injected, [](netns::VfControl*) {});
    return netns::make_netlink_vf_control();
}

bool gone(const netns::KernelError& e) {
    return e.errno_value() == ENODEV || e.errno_value() == ENOENT;
}

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
    if (!expected) return;   // ADD kept the VF's own GUID: nothing of ours to verify
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
    const auto link = vf.userspace ? std::nullopt : req.kernel.pod.link_by_name(env.ifname);
    const std::string from_address = current_guid(now, link ? link->mac : "");
    if (from_address.empty()) {
        spdlog::info("CHECK: the PF reports no GUID for VF {} and its netdev no IPoIB address: GUID not verified", vf.pci);
        return;
    }
    if (from_address != *expected) throw mismatch("GUID", from_address);
}

}  // namespace

PodLink sriov_add(const AddRequest& req) {
    const SriovConf& conf = req.conf.settings.get<SriovConf>();
    Kernel& kernel = req.kernel;
    const VfDevice vf = find_vf(kernel.sysfs, conf.pci_address, /*require_netdev=*/false);

    // Everything that can be refused from the config alone is refused before the VF is touched.
    const auto mac = req.conf.requested_mac(req.env.args);
    const auto guid = conf.requested_guid(req.conf.runtime, req.env.args);
    if (guid && !vf.infiniband)
        throw Error(ErrorCode::invalid_config, "VF " + vf.pci + " is an Ethernet VF: a GUID applies to InfiniBand VFs",
                    "remove \"guid\" / runtimeConfig.infinibandGUID for this network");
    const auto plan = plan_apply(conf, mac, vf.index, vf.infiniband);

    const std::string& state_dir = req.policy.state_dir;
    auto vf_lock = std::make_shared<FileLock>(FileLock::acquire(sriov_dir(state_dir) + "/vf_lock", vf.pci,
                                                                kVfLockTimeout, "the lock of VF " + vf.pci));

    // Ownership first: a VF another live pod holds is "busy" (102), whatever else is wrong with it.
    const InUseRecords records(state_dir);
    const VfOwner owner{req.conf.name, req.env.container_id, req.env.ifname, req.env.netns};
    records.claim(vf.pci, owner);
    // Kept until the very end of the unwinding (pushed first): the VF stays ours while it is restored.
    req.rollback.push("release the record of VF " + vf.pci, [records, pci = vf.pci, vf_lock] { records.remove(pci); });

    std::optional<netns::LinkInfo> host_link;
    if (vf.userspace) {
        check_userspace_vf_policy(req.policy, kernel.sysfs, vf);
    } else {
        if (!vf.netdev) throw missing_netdev_error(vf);
        host_link = kernel.host.link_by_name(*vf.netdev);
        if (!host_link)
            throw Error(ErrorCode::device_not_found, "VF netdev " + *vf.netdev + " of " + vf.pci + " is not in the host namespace",
                        "it may be attached to another pod");
        check_device_move(req.policy, kernel.host, kernel.sysfs, *host_link, "sriov",
                          req.states, AttachmentKey{req.env.container_id, req.env.ifname});
    }


    auto vfs = vf_control(kernel.vf);
    SriovState s;
    s.pf = vf.pf;
    s.pf_pci = vf.pf_pci;
    s.vf_index = static_cast<int>(vf.index);
    s.dpdk = vf.userspace;
    s.infiniband = vf.infiniband;
    s.driver = vf.driver;
    s.original = vfs->get(vf.pf, vf.index);
    s.pkey = conf.pkey;
    if (host_link) {
        req.state.host_ifname = host_link->name;
        req.state.host_mac = host_link->mac;
        req.state.host_was_up = host_link->up;
        req.state.host_alias = host_link->alias;
        s.original_mtu = host_link->mtu;
    }
    req.state.pci_address = vf.pci;
    // The record goes into the attachment state before every change it lists, so that a crash
    // right after the change still has DEL undo it.
    const auto save = [&] {
        req.state.mode_record = s.to_json();
        req.save_state();
    };
    save();

    // ---- InfiniBand GUID ---------------------------------------------------------------------
    if (vf.infiniband) {
        const std::string current = current_guid(s.original, host_link ? host_link->mac : "");
        if (!guid) {
            if (current.empty() || is_reserved_guid(current))
                throw Error(ErrorCode::invalid_config,
                            "InfiniBand VF " + vf.pci + " has no usable GUID (" + (current.empty() ? "unknown" : current) + ")",
                            "pass one (runtimeConfig.infinibandGUID from ib-kubernetes, CNI_ARGS guid, or \"guid\") "
                            "or assign the VF a GUID on the node");
        } else if (*guid != current) {
            // Rebinding renames devices node-wide: one GUID change at a time on this node.
            FileLock guid_lock = FileLock::acquire(sriov_dir(state_dir), "guid", kGuidLockTimeout, "the node-wide GUID lock");
            s.original_guid = current.empty() || current == "00:00:00:00:00:00:00:00" ? kAllOnesGuid : current;
            s.guid = *guid;
            s.applied.push_back("guid");
            save();
            const std::string name = host_link ? host_link->name : "";
            req.rollback.push("restore GUID of VF " + vf.pci,
                              [vfs, &sysfs = kernel.sysfs, &host = kernel.host, vf, original = s.original_guid, name] {
                                  apply_guid(*vfs, sysfs, host, vf, original, name);
                              });
            apply_guid(*vfs, kernel.sysfs, kernel.host, vf, *guid, name);
            if (host_link) {
                host_link = kernel.host.link_by_name(host_link->name);
                if (!host_link)
                    throw Error(ErrorCode::device_not_found, "VF " + vf.pci + " has no netdev after the driver rebind");
            }
            spdlog::info("VF {}: GUID {} set (was {})", vf.pci, *guid, s.original_guid);
        }
    }

    // ---- PF-side settings --------------------------------------------------------------------
    for (const auto& change : plan) {
        const std::string field = field_name(change.field);
        // Recorded before the write: a crash right after it still has DEL restore this field.
        s.applied.push_back(field);
        save();
        req.rollback.push("restore VF " + std::to_string(vf.index) + " " + field + " on " + vf.pf,
                          [vfs, pf = vf.pf, field, original = s.original, index = vf.index] {
                              if (auto undo = restore_change(field, original, index)) vfs->apply(pf, *undo);
                          });
        apply_verified(*vfs, vf.pf, change);
    }

    // ---- RDMA device: after any GUID rebind (new name), before the netdev moves ---------------
    rdma_isolation_add(req, RdmaFunction{vf.pci, host_link ? host_link->name : ""});

    PodLink pod_link;
    pod_link.pci_id = vf.pci;
    if (vf.userspace) {
        // DPDK: nothing moves; the result names the VF by its admin MAC (sriov-cni).
        const auto now = vfs->get(vf.pf, vf.index);
        pod_link.name = req.env.ifname;
        pod_link.userspace = true;
        if (now.mac != "00:00:00:00:00:00") pod_link.mac = now.mac;
        spdlog::info("VF {} is bound to {}: DPDK mode, no netdev moved", vf.pci, vf.driver);
    } else {
        NetdevPlan plan_netdev{*host_link, req.env.ifname, conf.mtu, vf.infiniband ? std::nullopt : mac};
        const auto link = move_into_pod(req, plan_netdev);
        pod_link.index = link.index;
        pod_link.name = link.name;
        pod_link.mac = link.mac;
        pod_link.mtu = link.mtu;
    }

    // ---- Multus device-info file --------------------------------------------------------------
    if (req.conf.runtime.device_info_file && !req.conf.runtime.device_info_file->empty()) {
        const std::string path = *req.conf.runtime.device_info_file;
        std::string rdma = req.state.rdma_device_in_pod();
        if (rdma.empty()) {
            const auto devices = netns::pci_rdma_devices(kernel.sysfs, vf.pci);
            if (!devices.empty()) rdma = devices.front();
        }
        const auto& dirs = req.policy.device_info_dirs;
        req.rollback.push("remove device-info file " + path, [path, dirs] { remove_device_info(dirs, path); });
        write_device_info(dirs, path, vf.pci, vf.pf_pci, rdma);
        s.device_info_file = path;
        save();
    }
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

    auto vfs = vf_control(req.vf);
    for (auto it = s.applied.rbegin(); it != s.applied.rend(); ++it) {
        if (*it == "guid") continue;
        const std::string field = *it;
        step("restore VF " + field, [&] {
            if (auto undo = restore_change(field, s.original, static_cast<unsigned>(s.vf_index))) vfs->apply(s.pf, *undo);
        });
    }
    if (std::find(s.applied.begin(), s.applied.end(), "guid") != s.applied.end()) {
        step("restore the VF GUID", [&] {
            FileLock guid_lock = FileLock::acquire(sriov_dir(state_dir), "guid", kGuidLockTimeout, "the node-wide GUID lock");
            VfDevice vf;
            vf.pci = state.pci_address;
            vf.pf = s.pf;
            vf.index = static_cast<unsigned>(s.vf_index);
            vf.driver = s.driver;
            vf.userspace = s.dpdk;
            apply_guid(*vfs, req.sysfs, req.host, vf, s.original_guid.empty() ? kAllOnesGuid : s.original_guid,
                       s.dpdk ? "" : state.host_ifname);
        });
    }
    remove_device_info(req.policy.device_info_dirs, s.device_info_file);
    if (!failures.empty()) {
        std::string msg = "VF " + state.pci_address + " not fully restored: ";
        for (std::size_t i = 0; i < failures.size(); ++i) msg += (i ? "; " : "") + failures[i];
        throw Error(ErrorCode::try_again, msg);   // the record stays: the retry is still ours
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
        auto link = kernel.pod.link_by_name(env.ifname);
        if (!link) throw Error(ErrorCode::device_not_found, "interface " + env.ifname + " not found in " + env.netns);
        if (!expected.mac.empty() && link->mac != checks::lowercase(expected.mac))
            throw Error(ErrorCode::invalid_config,
                        "interface " + env.ifname + " has MAC " + link->mac + ", expected " + expected.mac);
        if (settings.mtu != 0 && link->mtu != settings.mtu)
            throw Error(ErrorCode::invalid_config, "interface " + env.ifname + " has MTU " + std::to_string(link->mtu) +
                                                       ", expected " + std::to_string(settings.mtu));
    }
    // The PF-side settings this network asks for must still hold.
    auto vfs = vf_control(kernel.vf);
    const auto now = vfs->get(vf.pf, vf.index);
    for (const auto& change : plan_apply(settings, conf.requested_mac(env.args), vf.index, vf.infiniband))
        if (!reflects(now, change))
            throw Error(ErrorCode::invalid_config,
                        "VF " + vf.pci + " on " + vf.pf + " no longer has " + change.describe());
    if (vf.infiniband) check_vf_guid(req, vf, now);
}

}  // namespace rdmanet::cni
