#pragma once
// Internal to the sriov backend: moving the VF's netdev into the pod and back (one netns move per
// direction, as hostdev), with sriov-cni's extras: MTU and effective MAC set in the pod and
// restored before the netdev leaves, the previous name dropped as an altname in both directions.
#include <optional>
#include <string>

#include "rdmanet/cni/modes/backend.hpp"
#include "rdmanet/cni/modes/sriov/state.hpp"

namespace rdmanet::cni {

struct NetdevPlan {
    netns::LinkInfo host;            // the VF netdev in the host before ADD
    std::string pod_name;            // CNI_IFNAME
    unsigned mtu = 0;                // 0 = keep
    std::optional<std::string> mac;  // effective MAC to set in the pod
};

// Moves the VF netdev into the pod under plan.pod_name, then sets MTU and MAC (MAC verified).
// Every step's undo is pushed on `req.rollback` first. Returns the link as seen in the pod.
netns::LinkInfo move_into_pod(const AddRequest& req, const NetdevPlan& plan);

// DEL: returns the VF netdev of `state` to the host under its original name with its MAC, MTU
// and alias restored, wherever it is: in the pod as CNI_IFNAME, or already back in the host
// (kernel return on netns destruction) as the pod name or dev<N>, found by PCI address.
// Nothing found = nothing to do.
void return_to_host(const DelRequest& req, const AttachmentState& state, const SriovState& record);

}  // namespace rdmanet::cni
