#pragma once
// The cluster-wide half of node-slice mode (node_slice_size): releasing the slices of nodes that
// no longer exist. Runs once per cluster, in `rdmanetctl reconcile` (the reconcile CronJob), after
// the pass that removes dead pods' allocations; never on a node's agent, which sees one node.
//
// A slice listed in a NodeSlicePool's status.allocations is released when
//   - its node has no Node object (GET /api/v1/nodes lists it no more), and
//   - its slice IPPool holds no allocation of a live pod: every entry's podref names a pod that
//     does not exist, or one bound to another node (reconcile.hpp's live_pods for that node and
//     orphaned_offsets; an entry without a pod identity counts as live and keeps the slice). An
//     address in a node's slice was handed out for a pod on that node: a pod of the same name on
//     another node is a namesake (a StatefulSet pod rescheduled after the node was deleted).
// Dead pods' entries are normally gone already: `rdmanetctl reconcile` removes them first, so a
// deleted node's slice whose pods are all gone is released in the same run. An IPPool that still
// holds only dead pods' entries is released too (its deletion drops them).
//
// Order of writes, without a lock (racing writers test and retry):
//  1. the IPPools of the slice are read, then the pods (a pod exists before its ADD runs, so an
//     entry read before the pod list belongs to a pod the list shows unless it is really gone);
//  2. the slice's entry leaves the NodeSlicePool by a JSON patch that tests the resourceVersion
//     read (release_patch); a lost race re-reads the pool, the node and the IPPools and decides
//     again;
//  3. the IPPool is deleted with uid + resourceVersion preconditions of the copy read in 1. A 409
//     means a writer (the node, alive after all) published an entry after the read: the pool is
//     read again; with a live pod's entry in it the slice is given back to its node (claim_patch,
//     if still free) and reported, otherwise the deletion is retried. An IPPool absent in 1 is
//     read again instead, with the same outcome when it appeared meanwhile.
// Releasing from the NodeSlicePool first means a node that is in fact alive finds its slice gone
// whenever it looks: its agent's periodic re-check (slice_store.hpp recheck_held_slices) or its
// next publication, which finds the IPPool deleted and checks the NodeSlicePool before creating
// it again. It then stops allocating from that slice (the slice is recorded as revoked).
#include <string>
#include <vector>

#include "rdmanet/ipam/kube/api.hpp"
#include "rdmanet/ipam/kube/node_slices.hpp"

namespace rdmanet::ipam::kube {

struct SliceReclaimReport {
    std::vector<std::string> released;  // "<NodeSlicePool> <slice> <node>"
    std::vector<std::string> kept;      // "<NodeSlicePool> <slice> <node>: <why>" (node gone, slice in use)
    std::vector<std::string> restored;  // released, then given back: a live pod's entry appeared
    std::vector<std::string> problems;  // what needs a human (a restored slice another node took)
    std::size_t node_slice_pools = 0, slices = 0, nodes = 0;
};

// Pure part: the holders in `pool` that are not in `nodes` (sorted node names), as entries.
std::vector<SliceEntry> slices_of_missing_nodes(const NodeSlicePool& pool, const std::vector<std::string>& nodes);

// The names of the slice IPPools of `slice` held by `node` in NodeSlicePool `pool_name`:
// "<pool_name>-<node>-<slice>" (network_name set) and "<node>-<slice>" (no network_name: the
// NodeSlicePool then has the CNI network's name, which the IPPool's name leaves out).
std::vector<PoolKey> slice_pool_candidates(const std::string& pool_name, const std::string& node,
                                           const base::IpNetwork& slice);

// The names of the Node objects (GET /api/v1/nodes), sorted.
std::vector<std::string> list_nodes(KubeApi& api);

// Releases the slices of missing nodes in every NodeSlicePool of `ns` (see above). dry_run:
// reports what it would release, writes nothing.
SliceReclaimReport reclaim_slices(KubeApi& api, const std::string& ns, bool dry_run);

}  // namespace rdmanet::ipam::kube
