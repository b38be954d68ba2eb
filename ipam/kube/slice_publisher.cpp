// Publishing slice changes: see slice_publisher.hpp.
#include "rdmanet/ipam/kube/slice_publisher.hpp"

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/wire.hpp"
#include "rdmanet/ipam/core/u128.hpp"

#include <map>

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

// Creates the slice pool holding `entries` (offset -> owner); false when it exists meanwhile.
bool create_with(KubeApi& api, const SliceChange& c, const std::vector<std::pair<uint128, Owner>>& entries) {
    json pool = new_pool(c.ns, c.pool);
    for (const auto& [offset, owner] : entries) pool["spec"]["allocations"][to_decimal(offset)] = owner_json(owner);
    const std::string path = collection_path(c.ns, kPools);
    const HttpResponse r = api.call("POST", path, pool.dump(), "application/json", RequestOptions{kMetadataOnly, true});
    if (r.status == 201 || r.status == 200) return true;
    if (r.status == 409) return false;
    api.fail("POST " + path + " (create IPPool " + c.pool.name() + ")", r);
}

// The entries `change` still has to write, as publish_add/publish_remove would test and write them
// (nothing when the local store says the change has nothing to say any more).
std::vector<PoolChange> entries_of(Store& local, const SliceChange& c) {
    std::vector<PoolChange> out;
    if (c.op == SliceChange::Op::add) {
        const auto held = local.find(c.pool, c.podref, c.ifname);
        if (held && held->owner.container_id == c.container_id)
            out.push_back({held->offset, held->owner, std::nullopt});
        return out;
    }
    for (const auto& [offset, owner] : c.entries) {
        if (auto held = local.find(c.pool, owner.podref, owner.ifname);
            held && held->offset == offset && held->owner.container_id == owner.container_id) {
            continue;
        }
        out.push_back({offset, std::nullopt, owner});
    }
    return out;
}

PublishResult publish_add(KubeApi& api, Store& local, const SliceChange& c, std::string* conflict,
                          const SliceGuard* guard) {
    const auto held = local.find(c.pool, c.podref, c.ifname);
    if (!held || held->owner.container_id != c.container_id) return PublishResult::published;  // nothing to say
    const uint128 offset = held->offset;
    const Owner owner = held->owner;
    std::optional<Owner> expect;  // what the entry holds now, as far as we know (nullopt: absent)
    for (int attempt = 0;; ++attempt) {
        switch (patch(api, c, {{offset, owner, expect}})) {
        case Patched::ok: return PublishResult::published;
        case Patched::missing:
            if (guard && !(*guard)(c.pool)) {
                if (conflict) {
                    *conflict = "IPPool " + c.pool.name() +
                                " was deleted and its slice is no longer this node's (released "
                                "by the cluster's reconciler): " +
                                owner.podref + " (" + owner.container_id + ") is not published";
                }
                return PublishResult::revoked;
            }
            if (create_with(api, c, {{offset, owner}})) return PublishResult::published;
            break;
        case Patched::test_failed: {
            const auto pool = read(api, c);
            if (!pool) break;  // deleted meanwhile: the next round creates it
            auto it = pool->dump.allocations.find(offset);
            if (it == pool->dump.allocations.end()) {
                expect.reset();
            } else if (it->second == owner) {
                return PublishResult::published;
            } else if (it->second.podref == owner.podref && it->second.ifname == owner.ifname) {
                expect = it->second;  // the same pod's older sandbox: ours to update
            } else {
                if (conflict) {
                    *conflict = "IPPool " + c.pool.name() + " entry " + to_decimal(offset) + " is held by " +
                                it->second.podref + " (" + it->second.container_id +
                                "), but this node's store gives it to " + owner.podref + " (" + owner.container_id +
                                ")";
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
    // Entries not released locally (the DEL died before its commit) stay published (entries_of).
    for (const auto& e : entries_of(local, c)) {
        patch(api, c, {e});  // ok, test failed or missing: all mean "not there any more"
    }
    return PublishResult::published;
}

}  // namespace

PublishResult publish_change(KubeApi& api, Store& local, const SliceChange& change, std::string* conflict,
                             const SliceGuard* guard) {
    return change.op == SliceChange::Op::add ? publish_add(api, local, change, conflict, guard)
                                             : publish_remove(api, local, change);
}

namespace {

// One PATCH for consecutive changes of one slice pool: every entry is tested as its own change
// would test it, so the pool takes all of them or none. True when it took them (or there was
// nothing to write); false when the changes must go one by one (a test failed, the pool is
// missing, or two changes touch the same entry, whose tests could not all hold before the writes).
bool publish_batch(KubeApi& api, Store& local, const std::vector<SliceChange>& batch, const SliceGuard* guard) {
    std::vector<PoolChange> all;
    std::map<uint128, std::size_t> at;  // offset -> its change in `all`
    for (const auto& c : batch) {
        for (auto& e : entries_of(local, c)) {
            if (auto it = at.find(e.offset); it != at.end()) {
                // The same change again (a repeated ADD of a claim or pod records one more marker).
                const PoolChange& seen = all[it->second];
                if (seen.set == e.set && seen.expect == e.expect) continue;
                return false;
            }
            at.emplace(e.offset, all.size());
            all.push_back(std::move(e));
        }
    }
    if (all.empty()) return true;
    switch (patch(api, batch.front(), all)) {
    case Patched::ok: return true;
    case Patched::test_failed: return false;
    case Patched::missing: break;
    }
    // The slice's first publication (its pool is created then): created holding the adds when the
    // node still holds the slice; a removal in a missing pool is done already.
    std::vector<std::pair<uint128, Owner>> adds;
    for (const auto& e : all) {
        if (e.expect) continue;
        if (!e.set) return false;
        adds.emplace_back(e.offset, *e.set);
    }
    if (!guard || !(*guard)(batch.front().pool)) return false;  // one by one: each reports it revoked
    return create_with(api, batch.front(), adds);
}

}  // namespace

// The backlog is published oldest first. Consecutive changes of the same slice pool (what a node
// agent finds after deferred publication or an outage) go in one PATCH when the pool takes them
// as they are, else one by one with each change's own recovery (create, re-read, conflict).
PublishReport publish_pending(KubeApi& api, Store& local, SliceBacklog& backlog, const SliceGuard* guard) {
    PublishReport report;
    const auto pending = backlog.pending();
    std::size_t i = 0;
    try {
        while (i < pending.size()) {
            std::size_t end = i + 1;
            while (end < pending.size() && pending[end].second.ns == pending[i].second.ns &&
                   pending[end].second.pool == pending[i].second.pool) {
                ++end;
            }
            if (end - i > 1) {
                std::vector<SliceChange> batch;
                for (std::size_t k = i; k < end; ++k) batch.push_back(pending[k].second);
                if (publish_batch(api, local, batch, guard)) {
                    for (; i < end; ++i) {
                        backlog.remove(pending[i].first);
                        ++report.published;
                    }
                    continue;
                }
            }
            for (; i < end; ++i) {
                const auto& [marker, change] = pending[i];
                std::string conflict;
                if (publish_change(api, local, change, &conflict, guard) != PublishResult::published)
                    report.conflicts.push_back(conflict);
                backlog.remove(marker);
                ++report.published;
            }
        }
    } catch (const AccessDenied& e) {
        report.error = e.msg;
        report.access_denied = e.http;
        report.remaining = static_cast<int>(pending.size() - i);
    } catch (const IpamError& e) {
        report.error = e.msg;
        report.remaining = static_cast<int>(pending.size() - i);
    }
    return report;
}

}  // namespace rdmanet::ipam::kube
