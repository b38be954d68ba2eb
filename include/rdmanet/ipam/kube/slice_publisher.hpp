#pragma once
// Publishing the node's slice changes (slice_backlog.hpp) to the slice IPPools.
//
// The node's local store is the truth for its slices; the slice IPPool is its published copy,
// which other writers may also change (whereabouts' reconciler removing a dead pod's entry).
// So publication never writes a pool wholesale: each change is one JSON patch of the entries it
// touches, each tested first (wire.hpp pool_patch) - an add tests that the entry is absent, a
// removal that it still holds what this node wrote. Outcomes:
//   add     200 -> published. 404 -> the slice pool does not exist yet: created holding the
//           entry, once the guard (when given) confirms that the node still holds the slice. A
//           slice pool is deleted only by the cluster's reconciler releasing a gone node's slice
//           (slice_reclaim.hpp), so a missing pool is where a node that was thought gone finds its
//           slice released: the guard says so and the change is `revoked`, never re-created. 422 -> read the pool: the entry already is ours (a resend after a lost
//           answer) -> published; it holds the same pod+ifname under an older container id (a
//           sandbox re-created) -> replaced under a test of that old value; anyone else's ->
//           conflict, reported (never overwritten).
//   remove  200, 422 (someone else already removed or changed it) or 404 -> done.
// An add whose attachment no longer holds that address in the local store (never committed, or
// released since, whose removal has a later marker) publishes nothing. Each change is therefore
// idempotent, and the backlog is published oldest first, stopping at the first change the API
// server cannot take now (unreachable, deadline passed) so that order is kept.
#include <functional>
#include <string>
#include <vector>

#include "rdmanet/ipam/kube/api.hpp"
#include "rdmanet/ipam/kube/slice_backlog.hpp"
#include "rdmanet/ipam/core/store.hpp"

namespace rdmanet::ipam::kube {

enum class PublishResult { published, conflict, revoked };

// Asked before a missing slice IPPool is created: whether this node still holds the slice of `key`.
using SliceGuard = std::function<bool(const PoolKey& key)>;

// One change. Throws IpamError when the API server cannot take it now (code 11: unreachable or
// busy past the deadline; other codes: refused, e.g. RBAC).
PublishResult publish_change(KubeApi& api, Store& local, const SliceChange& change, std::string* conflict = nullptr,
                             const SliceGuard* guard = nullptr);

struct PublishReport {
    int published = 0;
    int remaining = 0;                   // still in the backlog (API unreachable)
    std::vector<std::string> conflicts;  // changes another writer's entry, or a revoked slice, prevented
    std::string error;                   // why publication stopped ("" = backlog empty)
    long access_denied = 0;              // 401/403 when it stopped because the credentials were refused
};

// Publishes the backlog oldest first (the node agent's and every CNI call's entry point).
PublishReport publish_pending(KubeApi& api, Store& local, SliceBacklog& backlog, const SliceGuard* guard = nullptr);

}  // namespace rdmanet::ipam::kube
