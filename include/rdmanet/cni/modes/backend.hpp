#pragma once
// What a mode's ADD/DEL/CHECK get. A mode puts one interface into the pod netns and takes it out
// again: a set of symmetric add/del/check functions (cni/modes/<mode>/mode.hpp), reached through
// the registry; everything shared (IPAM, addresses, state, results) is done by the plugin around
// them.
#include <string>
#include <string_view>

#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/cni/modes/kernel.hpp"
#include "rdmanet/cni/modes/rollback.hpp"
#include "rdmanet/netns/namespace.hpp"
#include "rdmanet/netns/rtnl.hpp"
#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::cni {

// The interface as it ends up in the pod, still DOWN; the plugin configures addresses and sets it UP.
struct PodLink {
    int index = 0;
    std::string name;
    std::string mac;
    unsigned mtu = 0;
    std::string pci_id;
    // sriov DPDK mode: the VF has no netdev in the pod (userspace driver); the plugin allocates
    // addresses for the result but applies nothing inside the pod. `index` is 0.
    bool userspace = false;
};

// ADD: validates host state (device present, MTU bounds), records in `state` what DEL needs
// and creates/moves the interface; every change pushes its undo on `rollback`. `save_state` is
// called once the device identity is known and before it leaves the host, so that a crash
// afterwards still lets DEL find it.
struct AddRequest {
    const NetConf& conf;
    const Environment& env;
    const NodePolicy& policy;  // the node admin's limits for this call
    const StateStore& states;  // every attachment's state (the "in use by another pod" checks)
    Kernel& kernel;
    Rollback& rollback;
    AttachmentState& state;
    std::function<void()> save_state;
};

// DEL: best effort, never fails because something is already gone. kernel.pod and kernel.pod_ns
// are null when the pod netns no longer exists.
struct DelRequest {
    const Environment& env;
    const std::optional<AttachmentState>& state;
    const NodePolicy& policy;  // teardown runs with the defaults when the admin's file is broken
    const StateStore& states;
    Kernel& kernel;
};

// CHECK: throws Error when the pod link is missing or differs from the config/result.
struct CheckRequest {
    const NetConf& conf;
    const Environment& env;
    const NodePolicy& policy;
    const StateStore& states;
    Kernel& kernel;
    const Interface& expected;  // our interface as the previous result lists it
};

// A random name ("rdm" + 8 hex digits) for links in transit; never a valid CNI_IFNAME clash
// in practice and ignored by NetworkManager-style tools that skip unknown prefixes.
std::string temporary_link_name();

// DEL of a virtual child the plugin created in the pod (macvlan, IPoIB): deletes the pod's
// CNI_IFNAME when it is a link of `kind`, leaves anything else alone (logged), and is a no-op when
// the netns or the link is already gone. `what` names the child in the log ("macvlan").
void delete_pod_child(const DelRequest& req, std::string_view kind, std::string_view what);

}  // namespace rdmanet::cni
