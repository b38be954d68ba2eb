#pragma once
// The Kubernetes datastore in node-slice mode (node_slice_size): the node's own slices, allocated
// in the node's local store first and published to the slice IPPools after.
//
// ADD  the slices this node holds come from a local file (held/<NodeSlicePool>.json, written
//      when a slice is claimed); none, or all full -> claim one (slice_claim.hpp: GET + PATCH of
//      the NodeSlicePool, once per slice). Then: a backlog marker (slice_backlog.hpp), the
//      allocation committed in the local SQLite store (<data_dir>/kubernetes/slices/ipam.db: the
//      decision and the double-hand-out guard are the local store's), and one PATCH publishing it
//      (slice_publisher.hpp). Steady state: 1 API request per ADD, none between nodes contending.
// DEL  marker, local release, one PATCH removing the entries (tested to still be ours).
// Refused: a 401 or 403 is no outage (access_denied_record.hpp): ADD fails with code 5 and hands
//      out nothing; DEL and GC release locally, keep the change in the backlog and report the
//      refusal (the plugin logs it as an error and DEL succeeds); the node records it for doctor
//      and the agent's metrics until a request with the credentials succeeds again.
// Outage: a node holding a slice with a free address keeps answering ADD and DEL; what could not
//      be published stays in the backlog, published in order by the next CNI call on the node or
//      by the node agent (publish_pending). Publication waits at most kPublishBudget per call. The
//      local store is on disk: a node rebooted during the outage never hands an address out twice.
//      After a backlog was published, the node re-reads the NodeSlicePool and stops allocating
//      from any slice it no longer holds (held_slices() tells which are revoked).
// Reclaim: the cluster's reconciler releases the slices of deleted nodes (slice_reclaim.hpp). A
//      node that was in fact alive finds out from its agent's re-check (recheck_held_slices), or
//      at its next ADD in that slice, whose publication finds the slice IPPool deleted: the
//      NodeSlicePool is checked before the pool is created again, and an ADD into a released
//      slice is taken back locally and served from another slice.
// Deferred (SliceSettings::defer_publication, rdmanetctl dranet-provider): ADD and DEL commit
//      locally with the backlog marker and publish nothing; the node agent's publish_pending
//      publishes the backlog on its interval (consecutive changes of one slice pool in one PATCH)
//      and its re-check finds revoked slices. Steady state: 0 API requests per ADD and DEL; only
//      claiming a slice talks to the API server during the verb.
// No overlapping-range reservations are written: slices of one NodeSlicePool are disjoint.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/kube/api.hpp"
#include "rdmanet/ipam/kube/slice_backlog.hpp"
#include "rdmanet/ipam/kube/slice_claim.hpp"
#include "rdmanet/ipam/kube/slice_publisher.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"
#include "rdmanet/ipam/core/store.hpp"

namespace rdmanet::ipam::kube {

// How long one CNI call waits for publication before leaving the change in the backlog.
inline constexpr std::chrono::milliseconds kPublishBudget{1000};
// How long a claim may take (the API server answering slowly or not at all): past it the ADD
// fails with code 11 rather than holding the runtime for the verb's whole budget.
inline constexpr std::chrono::milliseconds kClaimBudget{8000};

struct SliceSettings {
    std::string pool_name;  // the NodeSlicePool: network_name, else the CNI network's name
    std::string node;       // this node (node_identity.hpp)
    int prefix = 0;         // node_slice_size
    // StoreConfig::defer_slice_publication: ADD and DEL commit locally with the backlog marker and
    // publish nothing (neither their own change nor older ones); the node agent publishes.
    bool defer_publication = false;
};

// <data_dir>/kubernetes/slices: local store, held slices and backlog of node-slice mode.
std::string slices_dir(const std::string& data_dir);

// The node agent's entry point (the DaemonSet's rdmanetctl container, on its interval): publishes
// the node-slice backlog of the IPAM data directory `data_dir` (<data_dir>/kubernetes/slices) with
// the credentials of `kubeconfig`, oldest change first, within `budget`. Safe to run while CNI
// calls run (every change is idempotent). A missing slices directory is an empty backlog.
PublishReport publish_pending(const KubeConfig& kubeconfig, const std::string& data_dir,
                              std::chrono::milliseconds budget);

// What the node's held files say (the node's own view, no API request): per NodeSlicePool and
// node name, the slices it allocates from and those it found revoked (released by the cluster's
// reconciler, or taken over while the node could not see the API server). A revoked slice is never
// allocated from again.
struct HeldSliceState {
    std::string pool_name;  // the NodeSlicePool
    std::string node;
    base::IpNetwork range;  // the network's range
    int prefix = 0;         // node_slice_size
    std::vector<base::IpNetwork> held;
    std::vector<base::IpNetwork> revoked;
};
std::vector<HeldSliceState> held_slices(const std::string& data_dir);

// The node agent's periodic re-check (every pass): re-reads the NodeSlicePool of each held file
// and records as revoked every slice it no longer lists for the node - a slice the cluster's
// reconciler released because the node's Node object was gone (deleted and re-created, say).
// Returns those newly revoked, as "<NodeSlicePool> <slice> <node>". One GET per NodeSlicePool.
std::vector<std::string> recheck_held_slices(const KubeConfig& kubeconfig, const std::string& data_dir,
                                             std::chrono::milliseconds budget);

class SliceStore final : public Store {
public:
    SliceStore(KubeConfig config, Deadline deadline, const std::string& data_dir, SliceSettings settings);

    Allocation allocate(const AllocateRequest& request) override;
    std::vector<Allocation> release(std::span<const PoolKey> pools, const AttachmentId& attachment) override;
    std::optional<Allocation> find(const PoolKey& pool, std::string_view podref, std::string_view ifname) override;
    std::vector<PoolKey> pools() override;
    PoolDump dump(const PoolKey& pool) override;
    std::vector<Allocation> gc(std::string_view network, std::span<const PoolKey> pools,
                               std::span<const AttachmentId> valid) override;

    // Publishes the backlog now (within kPublishBudget).
    PublishReport publish();
    SliceBacklog& backlog() { return backlog_; }
    KubeApi& api() { return api_; }

    // The slices this node holds in `parent` as far as the node knows (the local file).
    std::vector<base::IpNetwork> held(const Range& parent);
    // Slices the node stopped holding while it could not see the API server (found by the
    // re-check after an outage); never allocated from again.
    std::vector<base::IpNetwork> revoked(const Range& parent);

private:
    SliceScope scope() const;
    AllocateRequest slice_request(const AllocateRequest& request, const base::IpNetwork& slice) const;
    // Claims a slice (under a node-local lock, so one process per node claims at a time) and
    // records it; `full` are held slices that cannot serve the request.
    base::IpNetwork claim(const AllocateRequest& request, const std::vector<base::IpNetwork>& full);
    // A slice new to this node may already have a slice IPPool with entries: whereabouts' own
    // plugin allocated on this node before (whereabouts' controller assigns slices to nodes), or
    // the node's store was lost. Those entries are recorded in the local store before the node
    // allocates from the slice, so it never hands one of their addresses out again.
    void adopt_published(const AllocateRequest& request, const base::IpNetwork& slice);
    // After a published backlog: the NodeSlicePool still lists these slices for this node?
    void recheck(const Range& parent);
    // Publication's guard (slice_publisher.hpp): before re-creating a missing slice IPPool.
    bool still_held_here(const PoolKey& key);
    // Publishes `marker` (and anything older first); leaves it in the backlog when it cannot.
    void publish_after_commit(const std::string& marker, const SliceChange& change, bool older_pending);

    KubeApi api_;
    std::string dir_;
    SqliteStore local_;
    SliceBacklog backlog_;
    SliceSettings settings_;
    // The API server refused the credentials (401/403) in this call: recorded for doctor and the
    // agent (access_denied_record.hpp); ADD fails, DEL and GC release locally and report it.
    void note_denied(const AccessDenied& e);

    bool unreachable_ = false;  // publication failed in this call: later changes go to the backlog
    std::optional<AccessDenied> denied_;
    bool recheck_due_ = false;
};

}  // namespace rdmanet::ipam::kube
