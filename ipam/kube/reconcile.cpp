// rdmanetctl reconcile: see reconcile.hpp for the ordering that makes it safe.
#include "rdmanet/ipam/kube/reconcile.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/core/naming.hpp"
#include "rdmanet/ipam/kube/node_slices.hpp"
#include "rdmanet/ipam/kube/slice_reclaim.hpp"
#include "rdmanet/base/json_limits.hpp"
#include "rdmanet/ipam/kube/response_json.hpp"

namespace rdmanet::ipam::kube {

using nlohmann::json;

namespace {

std::optional<PoolObject> parse_listed_pool(const json& item) {
    if (!item.contains("spec") || !item["spec"].is_object() || !item.contains("metadata")) return std::nullopt;
    auto range = base::IpNetwork::parse(item["spec"].value("range", ""));
    if (!range) return std::nullopt;
    auto nn = network_name_of(item["metadata"].value("name", ""), range->masked());
    if (!nn) return std::nullopt;
    return parse_pool(item, *nn);
}

base::IpAddress ip_of(const PoolKey& key, uint128 offset) {
    return base::IpAddress::from_u128(key.range.address.family(), key.range.address.to_u128() + offset);
}

}  // namespace

std::vector<std::string> live_pods(KubeApi& api, std::optional<std::string_view> node) {
    const HttpResponse r =
        api.call("GET", "/api/v1/pods", {}, "application/json", RequestOptions{{}, false, kMaxListBody});
    if (r.status != 200) api.fail("GET /api/v1/pods", r);
    auto body = base::parse_json_limited(r.body, api_body_limits(r)).value;
    std::vector<std::string> pods;
    if (!body.is_object() || !body.contains("items") || !body["items"].is_array()) return pods;
    for (const auto& p : body["items"]) {
        if (!p.contains("metadata") || !p["metadata"].is_object()) continue;
        if (node) {
            const std::string bound =
                p.contains("spec") && p["spec"].is_object() ? p["spec"].value("nodeName", "") : "";
            if (!bound.empty() && bound != *node) continue;
        }
        pods.push_back(p["metadata"].value("namespace", "") + "/" + p["metadata"].value("name", ""));
    }
    std::sort(pods.begin(), pods.end());
    return pods;
}

std::vector<uint128> orphaned_offsets(const PoolObject& pool, const std::vector<std::string>& pods) {
    std::vector<uint128> out;
    for (const auto& [offset, owner] : pool.dump.allocations) {
        const auto slash = owner.podref.find('/');
        if (slash == std::string::npos || slash == 0 || slash + 1 == owner.podref.size()) continue;  // no pod identity
        if (!std::binary_search(pods.begin(), pods.end(), owner.podref)) out.push_back(offset);
    }
    return out;
}

namespace {

// The object names of the slice IPPools the NodeSlicePools list (one LIST; none without the
// NodeSlicePool CRD).
std::set<std::string> slice_pool_names(KubeStore& store) {
    KubeApi& api = store.api();
    const std::string path = collection_path(store.ns(), kNodeSlicePools);
    const HttpResponse r = api.call("GET", path, {}, "application/json", RequestOptions{{}, false, kMaxListBody});
    if (r.status == 404 && !object_not_found(parse_status(r.status, r.body))) return {};
    if (r.status != 200) api.fail("GET " + path, r);
    const json body = base::parse_json_limited(r.body, api_body_limits(r)).value;
    std::set<std::string> names;
    if (!body.is_object() || !body.contains("items") || !body["items"].is_array()) return names;
    for (const auto& item : body["items"]) {
        const auto nsp = parse_stored_node_slice_pool(item);
        if (!nsp) continue;
        // The slice IPPool is named after the network's network_name, which the NodeSlicePool's
        // name equals only when network_name is set (unset: the pool is "<node>-<slice>" and the
        // NodeSlicePool carries the network's name): every name the slice can have, as reclaim
        // looks them up.
        for (const auto& e : nsp->entries) {
            if (e.node.empty()) continue;
            for (const auto& key : slice_pool_candidates(nsp->name, e.node, e.slice)) names.insert(key.name());
        }
    }
    return names;
}

}  // namespace

ReconcileReport reconcile(KubeStore& store, bool dry_run) {
    ReconcileReport report;
    KubeApi& api = store.api();
    const std::vector<json> reservations = store.list(kReservations);  // 1
    std::vector<PoolObject> pools;                                     // 2
    for (const auto& item : store.list(kPools)) {
        if (auto p = parse_listed_pool(item)) pools.push_back(std::move(*p));
    }
    std::vector<std::string> pods = live_pods(api);  // 3
    report.pods = pods.size();
    report.pools = pools.size();

    std::set<std::string> accounted;                // reservation names that a remaining pool entry accounts for
    std::map<std::string, std::string> entry_pool;  // reservation name -> pool object name, of the kept entries
    for (PoolObject& pool : pools) {
        const PoolKey key = pool.dump.pool;
        for (int attempt = 0;; ++attempt) {
            const auto orphans = orphaned_offsets(pool, pods);
            // A dry run counts the orphans as released, as the real run would.
            bool released = orphans.empty() || dry_run;
            if (!released) {
                for (auto o : orphans)
                    store.drop_reservation(key.network_name, ip_of(key, o), pool.dump.allocations.at(o));
                std::vector<PoolChange> changes;
                for (auto o : orphans) changes.push_back({o, std::nullopt, pool.dump.allocations.at(o)});
                released = store.patch_pool(pool, changes, /*whole_pool=*/true);
            }
            if (released) {
                for (auto o : orphans) {
                    const Owner& w = pool.dump.allocations.at(o);
                    report.released.push_back(key.name() + " " + ip_of(key, o).str() + " " + w.podref + " " + w.ifname);
                    // Its reservation goes with it (drop_reservation): not a stray one to delete.
                    accounted.insert(reservation_object_name(key.network_name, ip_of(key, o)));
                    pool.dump.allocations.erase(o);
                }
                break;
            }
            // The pool changed since read: read it again, and the pods with it (see reconcile.hpp).
            api.backoff(attempt, "IPPool " + key.name() + " changed during reconcile");
            auto fresh = store.read_pool(key);
            if (!fresh) {
                pool.dump.allocations.clear();
                break;
            }
            pool = std::move(*fresh);
            pods = live_pods(api);
        }
        report.allocations += pool.dump.allocations.size();
        for (const auto& [offset, owner] : pool.dump.allocations) {
            const std::string name = reservation_object_name(key.network_name, ip_of(key, offset));
            accounted.insert(name);
            entry_pool[name] = key.name();
        }
    }

    std::set<std::string> present;
    for (const auto& r : reservations) {
        const std::string name = r.contains("metadata") ? r["metadata"].value("name", "") : "";
        present.insert(name);
        if (name.empty() || accounted.contains(name)) continue;
        report.reservations_deleted.push_back(name);
        if (dry_run) continue;
        const std::string path = object_path(store.ns(), kReservations, name);
        const HttpResponse d = api.call("DELETE", path, delete_preconditions(r).dump());
        if (d.status == 200 || d.status == 202 || d.status == 404 || d.status == 409)
            continue;  // gone or changed: fine
        api.fail("DELETE " + path, d);
    }
    // Informational: kept entries whose reservation was not there at step 1 (an ADD in flight, a
    // pool of a network without overlap checks, or a killed ADD the pod's next ADD or DEL settles).
    // Released entries are reported as released, not as left alone. Node slices write no
    // reservation: their entries are counted, not listed one by one.
    std::optional<std::set<std::string>> slice_pools;
    for (const auto& [name, pool] : entry_pool) {
        if (present.contains(name)) continue;
        if (!slice_pools) slice_pools = slice_pool_names(store);
        if (slice_pools->contains(pool)) {
            ++report.slice_entries;
            continue;
        }
        report.unreserved.push_back(name);
    }
    return report;
}

}  // namespace rdmanet::ipam::kube
