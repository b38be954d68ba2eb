// Releasing the slices of nodes that are gone: see slice_reclaim.hpp.
#include "rdmanet/ipam/kube/slice_reclaim.hpp"

#include <algorithm>
#include <optional>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/node_identity.hpp"
#include "rdmanet/ipam/kube/reconcile.hpp"
#include "rdmanet/ipam/kube/slice_claim.hpp"
#include "rdmanet/ipam/kube/status.hpp"
#include "rdmanet/ipam/kube/wire.hpp"
#include "rdmanet/ipam/kube/response_json.hpp"

namespace rdmanet::ipam::kube {

using nlohmann::json;

namespace {

// One slice IPPool as read: absent, or the object (for the delete preconditions) and its entries.
struct ReadPool {
    PoolKey key;
    std::optional<json> object;
    std::optional<PoolObject> pool;
};

ReadPool read_slice_pool(KubeApi& api, const std::string& ns, const PoolKey& key) {
    const std::string path = object_path(ns, kPools, key.name());
    const HttpResponse r = api.call("GET", path);
    ReadPool out{key, std::nullopt, std::nullopt};
    if (r.status == 404 && object_not_found(parse_status(r.status, r.body))) return out;
    if (r.status != 200) api.fail("GET " + path, r);
    out.object = response_object(r, "GET " + path);
    out.pool = parse_pool(*out.object, key.network_name);
    return out;
}

std::vector<ReadPool> read_slice_pools(KubeApi& api, const std::string& ns, const NodeSlicePool& nsp,
                                       const SliceEntry& e) {
    std::vector<ReadPool> out;
    for (const auto& key : slice_pool_candidates(nsp.name, e.node, e.slice))
        out.push_back(read_slice_pool(api, ns, key));
    return out;
}

// "" when no pool holds a live pod's entry; else the first such entry, described.
std::string live_entry(const std::vector<ReadPool>& pools, const std::vector<std::string>& pods) {
    for (const auto& p : pools) {
        if (!p.pool) continue;
        const auto orphans = orphaned_offsets(*p.pool, pods);
        for (const auto& [offset, owner] : p.pool->dump.allocations) {
            if (std::find(orphans.begin(), orphans.end(), offset) != orphans.end()) continue;
            // orphaned_offsets never releases an entry whose podref is not "<namespace>/<name>".
            const bool identified = owner.podref.find('/') != std::string::npos;
            return "IPPool " + p.key.name() + " holds an allocation of " +
                   (identified ? "live pod " + owner.podref
                               : "an entry without a pod identity (podref \"" + owner.podref + "\")");
        }
    }
    return "";
}

bool node_exists(KubeApi& api, const std::string& node) {
    const std::string path = "/api/v1/nodes/" + node;
    const HttpResponse r = api.call("GET", path);
    if (r.status == 200) return true;
    if (r.status == 404 && object_not_found(parse_status(r.status, r.body))) return false;
    api.fail("GET " + path, r);
}

// The NodeSlicePool's name and shape, for slice_claim.hpp's reads and patches. The reconciler is
// no node: scope.node stays empty.
struct PoolRef {
    SliceScope scope;
    Range parent;
};

PoolRef ref_of(const std::string& ns, const NodeSlicePool& nsp) {
    PoolRef ref{SliceScope{ns, nsp.name, "", nsp.slice_prefix}, Range{}};
    ref.parent.cidr = nsp.range;
    return ref;
}

// Gives `e.slice` back to `e.node` after a release that a live entry overtook: true when it is
// the node's again, false when another node holds it now.
bool give_back(KubeApi& api, const PoolRef& ref, const SliceEntry& e) {
    for (int attempt = 0;; ++attempt) {
        const auto nsp = read_node_slice_pool(api, ref.scope, ref.parent);
        if (!nsp) return false;
        const std::string holder = nsp->holder(e.slice);
        if (holder == e.node) return true;
        if (!holder.empty()) return false;
        if (patch_node_slice_pool(api, ref.scope, claim_patch(*nsp, e.node, e.slice))) return true;
        api.backoff(attempt, "NodeSlicePool " + ref.scope.pool_name + " changed while giving " + e.slice.str() +
                                 " back to " + e.node);
    }
}

// Step 3 (slice_reclaim.hpp): deletes the slice's IPPools under the preconditions of the copies
// read; "" when done, else the live entry that appeared meanwhile.
std::string delete_slice_pools(KubeApi& api, const std::string& ns, const std::string& node,
                               std::vector<ReadPool> pools) {
    for (auto& p : pools) {
        for (int attempt = 0;; ++attempt) {
            if (!p.object) {
                // Absent when decided: still absent, or created since (by the node, alive after all)?
                p = read_slice_pool(api, ns, p.key);
                if (!p.object) break;
            } else {
                const std::string path = object_path(ns, kPools, p.key.name());
                const HttpResponse d = api.call("DELETE", path, delete_preconditions(*p.object).dump());
                if (d.status == 200 || d.status == 202) break;
                if (d.status == 404 && object_not_found(parse_status(d.status, d.body))) break;
                if (d.status != 409) api.fail("DELETE " + path, d);
                p = read_slice_pool(api, ns, p.key);  // changed since read
                if (!p.object) break;
            }
            const std::vector<ReadPool> one{p};
            if (std::string live = live_entry(one, live_pods(api, node)); !live.empty()) return live;
            api.backoff(attempt, "IPPool " + p.key.name() + " changed while releasing its slice");
        }
    }
    return "";
}

}  // namespace

std::vector<SliceEntry> slices_of_missing_nodes(const NodeSlicePool& pool, const std::vector<std::string>& nodes) {
    std::vector<SliceEntry> out;
    for (const auto& e : pool.entries) {
        if (e.node.empty() || std::binary_search(nodes.begin(), nodes.end(), e.node)) continue;
        out.push_back(e);
    }
    return out;
}

std::vector<PoolKey> slice_pool_candidates(const std::string& pool_name, const std::string& node,
                                           const base::IpNetwork& slice) {
    return {slice_pool_key(pool_name, node, slice), slice_pool_key("", node, slice)};
}

// Names are all the reclaim needs: the apiserver's metadata-only list (client-go's metadata
// client asks the same way) keeps the answer small - a full Node object is kilobytes of status
// (images, conditions). A server without the transform answers the full list.
constexpr std::string_view kMetadataListOnly =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

std::vector<std::string> list_nodes(KubeApi& api) {
    const HttpResponse r = api.call("GET", "/api/v1/nodes", {}, "application/json",
                                    RequestOptions{kMetadataListOnly, false, kMaxListBody});
    if (r.status != 200) api.fail("GET /api/v1/nodes", r);
    const json body = response_object(r, "GET /api/v1/nodes");
    std::vector<std::string> nodes;
    if (body.contains("items") && body["items"].is_array()) {
        for (const auto& n : body["items"]) {
            if (n.is_object() && n.contains("metadata") && n["metadata"].is_object())
                nodes.push_back(n["metadata"].value("name", ""));
        }
    }
    std::sort(nodes.begin(), nodes.end());
    return nodes;
}

SliceReclaimReport reclaim_slices(KubeApi& api, const std::string& ns, bool dry_run) {
    SliceReclaimReport report;
    const std::string list_path = collection_path(ns, kNodeSlicePools);
    const HttpResponse r = api.call("GET", list_path, {}, "application/json", RequestOptions{{}, false, kMaxListBody});
    // No NodeSlicePool CRD: no network uses node_slice_size, nothing to reclaim.
    if (r.status == 404 && !object_not_found(parse_status(r.status, r.body))) return report;
    if (r.status != 200) api.fail("GET " + list_path, r);
    const json body = response_object(r, "GET " + list_path);
    std::vector<NodeSlicePool> pools;
    if (body.contains("items") && body["items"].is_array()) {
        for (const auto& item : body["items"]) {
            if (auto p = parse_stored_node_slice_pool(item)) {
                pools.push_back(std::move(*p));
            } else {
                const std::string name = item.contains("metadata") ? item["metadata"].value("name", "") : "";
                report.problems.push_back("NodeSlicePool " + name +
                                          " is malformed (spec.range, spec.sliceSize or "
                                          "status.allocations): left alone");
            }
        }
    }
    report.node_slice_pools = pools.size();
    if (pools.empty()) return report;
    // Nodes after the NodeSlicePools: a node that claims a slice exists before it claims, so a
    // holder read first and missing from this list is really gone (or re-created later: its
    // agent then finds the slice revoked and it claims another).
    const std::vector<std::string> nodes = list_nodes(api);
    report.nodes = nodes.size();

    for (NodeSlicePool nsp : pools) {
        const PoolRef ref = ref_of(ns, nsp);
        for (const auto& e : nsp.entries) report.slices += e.node.empty() ? 0 : 1;
        for (const SliceEntry& gone : slices_of_missing_nodes(nsp, nodes)) {
            // The name goes into GET/DELETE paths (the Node, the slice IPPool): a name no Node can
            // have ("../..", "a/b") is left alone for a human, never used.
            if (!valid_node_name(gone.node)) {
                report.problems.push_back("NodeSlicePool " + nsp.name + " lists slice " + gone.slice.str() +
                                          " for node \"" + gone.node +
                                          "\", which is not a valid node name: left alone");
                continue;
            }
            const std::string what = nsp.name + " " + gone.slice.str() + " " + gone.node;
            for (int attempt = 0;; ++attempt) {
                const std::vector<ReadPool> slice_pools = read_slice_pools(api, ns, nsp, gone);  // step 1
                if (std::string live = live_entry(slice_pools, live_pods(api, gone.node)); !live.empty()) {
                    report.kept.push_back(what + ": " + live);
                    break;
                }
                if (dry_run) {
                    report.released.push_back(what);
                    break;
                }
                if (!patch_node_slice_pool(api, ref.scope, release_patch(nsp, gone.node, gone.slice))) {  // step 2
                    api.backoff(attempt, "NodeSlicePool " + nsp.name + " changed while releasing " + gone.slice.str());
                    auto fresh = read_node_slice_pool(api, ref.scope, ref.parent);
                    if (!fresh || fresh->holder(gone.slice) != gone.node || node_exists(api, gone.node)) break;
                    nsp = std::move(*fresh);
                    continue;
                }
                // The next release in this pool tests the version this write made: read it again.
                if (auto fresh = read_node_slice_pool(api, ref.scope, ref.parent)) nsp = std::move(*fresh);
                if (std::string live = delete_slice_pools(api, ns, gone.node, slice_pools); !live.empty()) {  // step 3
                    if (give_back(api, ref, gone)) {
                        report.restored.push_back(what + ": " + live);
                    } else {
                        report.problems.push_back(what + ": released, then " + live +
                                                  ", and another node claimed the slice meantime: its addresses may be "
                                                  "handed out twice; drain node " +
                                                  gone.node);
                    }
                    if (auto fresh = read_node_slice_pool(api, ref.scope, ref.parent)) nsp = std::move(*fresh);
                    break;
                }
                report.released.push_back(what);
                break;
            }
        }
    }
    return report;
}

}  // namespace rdmanet::ipam::kube
