// Publishing slice changes: see slice_publisher.hpp.
#include "rdmanet/ipam/kube/slice_publisher.hpp"

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/wire.hpp"
#include "rdmanet/ipam/core/u128.hpp"

namespace rdmanet::ipam::kube {

using nlohmann::json;

namespace {

PoolObject view_of(const PoolKey& key) {
    PoolObject v;
    v.dump.pool = key;
    v.has_allocations_map = true;
    return v;
}

enum class Patched { ok, test_failed, missing };

Patched patch(KubeApi& api, const SliceChange& c, const std::vector<PoolChange>& changes) {
    const std::string path = object_path(c.ns, kPools, c.pool.name());
    const HttpResponse r = api.call("PATCH", path, pool_patch(view_of(c.pool), changes).dump(), kJsonPatch,
                                    RequestOptions{kMetadataOnly, true});
    if (r.status == 200) return Patched::ok;
    if (r.status == 422 || r.status == 409) return Patched::test_failed;
    if (r.status == 404 && object_not_found(parse_status(r.status, r.body))) return Patched::missing;
    api.fail("PATCH " + path, r);
}

std::optional<PoolObject> read(KubeApi& api, const SliceChange& c) {
    const std::string path = object_path(c.ns, kPools, c.pool.name());
    const HttpResponse r = api.call("GET", path);
    if (r.status == 200) return parse_pool_body(r.body, c.pool.network_name);
    if (r.status == 404 && object_not_found(parse_status(r.status, r.body))) return std::nullopt;
    api.fail("GET " + path, r);
}

// Creates the slice pool holding `offset` -> `owner`; false when it exists meanwhile.
bool create_with(KubeApi& api, const SliceChange& c, uint128 offset, const Owner& owner) {
    json pool = new_pool(c.ns, c.pool);
    pool["spec"]["allocations"][to_decimal(offset)] = owner_json(owner);
    const std::string path = collection_path(c.ns, kPools);
    const HttpResponse r = api.call("POST", path, pool.dump(), "application/json", RequestOptions{kMetadataOnly, true});
    if (r.status == 201 || r.status == 200) return true;
    if (r.status == 409) return false;
    api.fail("POST " + path + " (create IPPool " + c.pool.name() + ")", r);
}

PublishResult publish_add(KubeApi& api, Store& local, const SliceChange& c, std::string* conflict, const SliceGuard* guard) {
    const auto held = local.find(c.pool, c.podref, c.ifname);
    if (!held || held->owner.container_id != c.container_id) return PublishResult::published;   // nothing to say
    const uint128 offset = held->offset;
    const Owner owner = held->owner;
    std::optional<Owner> expect;   // what the entry holds now, as far as we know (nullopt: absent)
    for (int attempt = 0;; ++attempt) {
        switch (patch(api, c, {{offset, owner, expect}})) {
        case Patched::ok:
            return PublishResult::published;
        case Patched::missing:
            if (guard && !(*guard)(c.pool)) {
                if (conflict) {
                    *conflict = "IPPool " + c.pool.name() + " was deleted and its slice is no longer this node's (released "
                                "by the cluster's reconciler): " + owner.podref + " (" + owner.container_id + ") is not published";
                }
                return PublishResult::revoked;
            }
            if (create_with(api, c, offset, owner)) return PublishResult::published;
            break;
        case Patched::test_failed: {
            const auto pool = read(api, c);
            if (!pool) break;   // deleted meanwhile: the next round creates it
            auto it = pool->dump.allocations.find(offset);
            if (it == pool->dump.allocations.end()) {
                expect.reset();
            } else if (it->second == owner) {
                return PublishResult::published;
            } else if (it->second.podref == owner.podref && it->second.ifname == owner.ifname) {
                expect = it->second;   // the same pod's older sandbox: ours to update
            } else {
                if (conflict) {
                    *conflict = "IPPool " + c.pool.name() + " entry " + to_decimal(offset) + " is held by " +
                                it->second.podref + " (" + it->second.container_id + "), but this node's store gives it to " +
                                owner.podref + " (" + owner.container_id + ")";
                }
                return PublishResult::conflict;
            }
            break;
        }
        }
        api.backoff(attempt, "IPPool " + c.pool.name() + " changed while publishing");
    }
}

PublishResult publish_remove(KubeApi& api, Store& local, const SliceChange& c) {
    for (const auto& [offset, owner] : c.entries) {
        // Not released locally (the DEL died before its commit): the entry stays published.
        if (auto held = local.find(c.pool, owner.podref, owner.ifname);
            held && held->offset == offset && held->owner.container_id == owner.container_id) {
            continue;
        }
        patch(api, c, {{offset, std::nullopt, owner}});   // ok, test failed or missing: all mean "not there any more"
    }
    return PublishResult::published;
}

}  // namespace

PublishResult publish_change(KubeApi& api, Store& local, const SliceChange& change, std::string* conflict,
                             const SliceGuard* guard) {
    return change.op == SliceChange::Op::add ? publish_add(api, local, change, conflict, guard) : publish_remove(api, local, change);
}

PublishReport publish_pending(KubeApi& api, Store& local, SliceBacklog& backlog, const SliceGuard* guard) {
    PublishReport report;
    const auto pending = backlog.pending();
    for (std::size_t i = 0; i < pending.size(); ++i) {
        const auto& [marker, change] = pending[i];
        try {
            std::string conflict;
            if (publish_change(api, local, change, &conflict, guard) != PublishResult::published) report.conflicts.push_back(conflict);
            backlog.remove(marker);
            ++report.published;
        } catch (const AccessDenied& e) {
            report.error = e.msg;
            report.access_denied = e.http;
            report.remaining = static_cast<int>(pending.size() - i);
            return report;
        } catch (const IpamError& e) {
            report.error = e.msg;
            report.remaining = static_cast<int>(pending.size() - i);
            return report;
        }
    }
    return report;
}

}  // namespace rdmanet::ipam::kube
