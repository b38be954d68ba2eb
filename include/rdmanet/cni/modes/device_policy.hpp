#pragma once
// The node policy's device checks, made by the modes before any change to a host device: what a
// host device is (sysfs, rtnetlink), whether the node itself needs it, whether another pod holds
// it (the attachment-state store), and the policy's devices/masters rules.
#include <optional>
#include <string>
#include <string_view>

#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/netns/rtnl.hpp"
#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::cni {

class StateStore;
struct AttachmentKey;

// ---- device checks (backends, before any change to the device) --------------------------------

// A host netdev as the policy sees it.
struct HostDevice {
    netns::LinkInfo link;
    std::string pci_address;  // "" when not a PCI function
    std::string vendor_id;    // "15b3"; "" when unknown
    bool is_vf = false;       // sysfs <pci>/physfn exists
};
HostDevice describe_host_device(const netns::Sysfs& sysfs, const netns::LinkInfo& link);

// Why a link of the host netns is one the node itself needs; nullopt when it is not.
// Reasons: loopback; holds a default route (either family); lower device of such a device (VLAN
// parent, macvlan master: IFLA_LINK chain) or a port of it (sysfs class/net/<dev>/master);
// holds an address other than a link-local one (the node's own addresses).
std::optional<std::string> node_uplink_reason(netns::Rtnl& host, const netns::Sysfs& sysfs,
                                              const netns::LinkInfo& link);

// hostdev / sriov (and anything else that MOVES a host netdev into a pod): built-in protections
// (loopback, uplink, already attached to another live pod per `store`) then policy.devices and
// policy.modes. `self` is the attachment being added (its own leftover state is not "another
// pod"). Refusal: code 7 for policy (device not in the allow-list, not a VF), 102 (device_busy)
// for a device the node or another pod holds. The device is untouched on refusal.
void check_device_move(const NodePolicy& policy, netns::Rtnl& host, const netns::Sysfs& sysfs,
                       const netns::LinkInfo& link, std::string_view mode, const StateStore& store,
                       const AttachmentKey& self);

// macvlan / IPoIB child on `master`: loopback is refused, the uplink only when
// policy.masters.allow_uplink is false, then policy.masters. Code 7 / 102 as above.
void check_master(const NodePolicy& policy, netns::Rtnl& host, const netns::Sysfs& sysfs, const netns::LinkInfo& master,
                  std::string_view mode);

// Pure matching, exposed for unit tests and for devices that are not netdevs (an RDMA device's
// PCI function): empty string when `device` satisfies `rules`, else the reason it does not.
std::string device_rules_mismatch(const DeviceRules& rules, const HostDevice& device, bool is_master);

}  // namespace rdmanet::cni
