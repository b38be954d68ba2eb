#pragma once
// `rdmanetctl reconcile`: releases IPPool allocations whose pod no longer exists and reservations
// that no pool entry accounts for (what a missed DEL or a killed plugin leaves behind).
//
// Why it is safe without a lock:
//  - Order of reads: reservations, then pools, then pods, then writes. An ADD writes its pool entry
//    before its reservation and a pod exists before its ADD runs, so (a) every reservation read in
//    step 1 whose ADD completed has its pool entry visible in step 2, and (b) every pool entry read
//    in step 2 belongs to a pod that step 3 still sees unless that pod is really gone.
//  - Each pool is written with a resourceVersion test against the copy read in step 2: an ADD or
//    DEL that lands in between makes the write fail, and that pool is read again together with the
//    pods (a pod re-created under the same name and re-ADDed in between is then seen and kept).
//  - Reservations are deleted with uid + resourceVersion preconditions: one re-created since the
//    read is left alone.
//  - An allocation whose podref is not "<namespace>/<name>" (no pod identity) is never released.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/ipam/kube/kube_store.hpp"

namespace rdmanet::ipam::kube {

struct ReconcileReport {
    std::vector<std::string> released;              // "pool ip podref ifname"
    std::vector<std::string> reservations_deleted;  // reservation names
    std::vector<std::string> unreserved;            // pool entries of live pods without a reservation (left alone)
    // Entries of node-slice IPPools (a slice a NodeSlicePool lists for a node): node slices write
    // no reservation by design (slices are disjoint), so they are counted, not listed as unreserved.
    std::size_t slice_entries = 0;
    std::size_t pools = 0, allocations = 0, pods = 0;
};

// The pods that exist, as sorted "<namespace>/<name>" (one LIST of all pods): what an allocation's
// podref is checked against. whereabouts' podref has no UID, so a pod re-created under the same
// name counts as live. With `node`, only pods bound to that node or not bound yet: an allocation
// in a node's own slice (node_slice_size) was made for a pod on that node, so a namesake on another
// node (a StatefulSet pod rescheduled after its node was deleted) does not keep it.
std::vector<std::string> live_pods(KubeApi& api, std::optional<std::string_view> node = std::nullopt);

// Pure part: the allocations of `pool` that belong to no pod in `pods` ("ns/name" set).
std::vector<uint128> orphaned_offsets(const PoolObject& pool, const std::vector<std::string>& pods);

ReconcileReport reconcile(KubeStore& store, bool dry_run);

}  // namespace rdmanet::ipam::kube
