#pragma once
// The Kubernetes datastore: whereabouts' IPPool and OverlappingRangeIPReservation objects in the
// kubeconfig context's namespace, written with optimistic concurrency and no Lease.
//
// Protocol (per pool; the objects and patches are described in docs/ipam.md, Wire format):
//   ADD  GET pool (404 -> create it; 409 AlreadyExists -> GET again), decide() over its
//        allocations, JSON patch that tests the chosen entry is still absent and adds it (a failed
//        test is 422 -> re-read, back off, decide again; see wire.hpp pool_patch for why per
//        entry and not per resourceVersion; a lost race retries once on the same view without
//        the lost address, then re-reads; retries skip a random number of free addresses so
//        that concurrent losers do not collide again), then with enable_overlapping_ranges
//        CREATE the reservation. Uncontended: 2 requests, 3 with reservations.
//        A reservation held by another pod (an overlapping pool handed out the same address)
//        takes the entry out again and picks the next address; any other failure after the pool
//        write also takes it out, so an ADD never returns an address missing from either object.
//   DEL  GET pool, for the attachment's entries: GET + DELETE (preconditions: uid and
//        resourceVersion) the reservation if it is this pod's, then the patch removing the
//        entries (each tested to still hold what was read). Reservation first: a crash in between leaves the pool entry, which the next DEL
//        finds by container id + ifname; the other order would leave a reservation nothing points to.
//   So a process killed at any point leaves either nothing, or a pool entry (with or without its
//   reservation) that the runtime's DEL or `rdmanetctl reconcile` removes.
//   A DEL the API server does not take within the verb's budget (no answer, a trickle, 5xx, a
//   garbage body, 401/403) never wedges the pod's teardown: the release is recorded in the node's
//   backlog (<journal dir>/backlog, the marker format of node slices, slice_backlog.hpp) and DEL
//   fails with ReleaseDeferred, which the plugin logs as an error and answers with success; the
//   node agent finishes the record every pass (finish_deferred_releases), and an ADD of the same
//   attachment takes the entry over and drops the record.
// Entries written by whereabouts itself are read and respected like ours (same keys), and ours are
// valid whereabouts objects.
//
// Cost on big pools (10k entries, ~700 kB per pool object): the GET is unavoidable (the API has
// no conditional or partial read of one object), so it is read without a JSON tree and with only
// this attachment's entries made into owners (wire.hpp EntrySelector); the PATCH asks for the
// answer as metadata only (wire.hpp kMetadataOnly) and drops whatever body comes back unread.
//
// CNI GC needs to know what *this node* allocated, which the shared pool does not say: each ADD
// first records the attachment in a node-local journal (<data_dir>/kubernetes/<network>/
// <container id>:<ifname>), each DEL removes it, and GC releases the journalled attachments that
// are not in the valid list.
#include <chrono>
#include <memory>
#include <string>

#include "rdmanet/ipam/kube/api.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"
#include "rdmanet/ipam/kube/wire.hpp"
#include "rdmanet/ipam/core/store.hpp"

namespace rdmanet::ipam::kube {

// The node's deferred single-pool releases (see above), oldest first, within `budget`: each
// record's release is done against the API server and the record removed. The report's
// `remaining` counts what is left (the API server still unreachable or refusing).
struct PublishReport;
PublishReport finish_deferred_releases(const KubeConfig& kubeconfig, const std::string& data_dir,
                                       std::chrono::milliseconds budget);
// <data_dir>/kubernetes/backlog: where DEL records the releases the API server did not take.
std::string deferred_releases_dir(const std::string& data_dir);

class KubeStore final : public Store {
public:
    // `journal_dir` "" disables the journal (rdmanetctl, benchmarks); GC then releases nothing.
    KubeStore(KubeConfig config, Deadline deadline, std::string journal_dir, RetryPolicy policy = {});

    Allocation allocate(const AllocateRequest& request) override;
    std::vector<Allocation> release(std::span<const PoolKey> pools, const AttachmentId& attachment) override;
    std::optional<Allocation> find(const PoolKey& pool, std::string_view podref, std::string_view ifname) override;
    std::vector<PoolKey> pools() override;
    PoolDump dump(const PoolKey& pool) override;
    std::vector<Allocation> gc(std::string_view network, std::span<const PoolKey> pools,
                               std::span<const AttachmentId> valid) override;

    KubeApi& api() { return api_; }
    const std::string& ns() const { return api_.config().namespace_; }

    // GET; nullopt when the pool does not exist. Throws for any other failure. With `select`, only
    // the selected entries keep their owner (wire.hpp EntrySelector); `taken` has them all.
    std::optional<PoolObject> read_pool(const PoolKey& key, const EntrySelector* select = nullptr);
    // Every IPPool and reservation object of the namespace (rdmanetctl).
    std::vector<nlohmann::json> list(std::string_view plural);
    // Applies `changes` (wire.hpp pool_patch: per-entry tests, plus the resourceVersion test with
    // whole_pool); false on a lost race (422/409).
    bool patch_pool(const PoolObject& pool, const std::vector<PoolChange>& changes, bool whole_pool = false);
    // Deletes the reservation of `ip` if podref+ifname of `owner` hold it; returns whether it is
    // gone (absent or deleted).
    void drop_reservation(std::string_view network_name, const base::IpAddress& ip, const Owner& owner);

private:
    // lost: a test failed; unsure: a test failed on a resent PATCH (the first may have applied);
    // gone: the pool was deleted.
    enum class PatchOutcome { applied, lost, unsure, gone };
    PatchOutcome try_patch(const PoolObject& pool, const std::vector<PoolChange>& changes, bool whole_pool = false);
    // `nsp_name`: the NodeSlicePool that would divide the range (creation refused while it exists).
    PoolObject read_or_create_pool(const PoolKey& key, const EntrySelector* select, const std::string& nsp_name);
    // Creates the reservation; true when it is (now) held by `owner`, false when someone else holds it.
    bool reserve(std::string_view network_name, const base::IpAddress& ip, const Owner& owner);
    // Takes `offset` out of the pool again if `owner` still holds it there (rollback).
    void unwind(const PoolKey& key, uint128 offset, const Owner& owner);
    void journal_add(std::string_view network, const AttachmentId& a);
    void journal_remove(std::string_view network, const AttachmentId& a);
    // The backlog of releases DEL could not finish ("" without a journal: rdmanetctl, benchmarks).
    std::string backlog_dir() const { return journal_dir_.empty() ? std::string() : journal_dir_ + "/backlog"; }
    void defer_release(const PoolKey& key, const AttachmentId& attachment);
    std::vector<Allocation> release_in(const PoolKey& key, const AttachmentId& attachment);
    void drop_deferred(const AttachmentId& attachment);

    KubeApi api_;
    std::string journal_dir_;
};

}  // namespace rdmanet::ipam::kube
