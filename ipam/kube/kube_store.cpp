// The Kubernetes datastore: see kube_store.hpp for the protocol and why it is ordered so.
#include "rdmanet/ipam/kube/kube_store.hpp"
#include "rdmanet/ipam/kube/mode_guard.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <fstream>
#include <set>
#include <sstream>

#include "rdmanet/base/failpoint.hpp"
#include "rdmanet/ipam/core/allocator.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/core/naming.hpp"
#include "rdmanet/ipam/core/runs.hpp"
#include "rdmanet/ipam/kube/size_limit.hpp"
#include "rdmanet/ipam/kube/response_json.hpp"
#include "rdmanet/ipam/kube/slice_backlog.hpp"
#include "rdmanet/ipam/kube/slice_publisher.hpp"

namespace rdmanet::ipam::kube {

using nlohmann::json;

namespace {

// A name that reaches a path of the journal: no separators, no dot names, nothing odd.
bool safe_component(std::string_view s) {
    if (s.empty() || s.size() > 255 || s == "." || s == "..") return false;
    for (char c : s) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                        c == '_' || c == '.';
        if (!ok) return false;
    }
    return true;
}

base::IpAddress address_of(const PoolKey& key, uint128 offset) {
    return base::IpAddress::from_u128(key.range.address.family(), key.range.address.to_u128() + offset);
}

Allocation make_allocation(const PoolKey& key, uint128 offset, Owner owner, std::string network, bool reused) {
    return Allocation{key, offset, address_of(key, offset), std::move(owner), std::move(network), reused};
}

// Lost write races: where the next pick of a caller that lost goes. Every caller that read the
// pool at about the same time wants the same lowest free offset and only one gets it; a loser
// that tried the lowest free again would race the next round of first attempts for it. So a
// loser skips a random number of free offsets in [1, span]: span 16 from the first loss (enough
// for the concurrency one node's runtime produces), doubling with each further loss up to 256.
int spread_span(int losses) { return 16 << std::min(std::max(losses - 1, 0), 4); }

// The k-th free offset after d.offset (k random in [1, span]), or the last free one found when
// fewer are free.
Decision spread(const Range& range, Decision d, std::span<Coverage* const> taken_before, int span) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    int skip = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(span));
    MemoryRuns passed;
    RunsCoverage passed_cov(passed);
    std::vector<Coverage*> taken(taken_before.begin(), taken_before.end());
    taken.push_back(&passed_cov);
    while (skip-- > 0) {
        passed.insert(d.offset);
        try {
            d = decide(range, std::nullopt, std::nullopt, taken);
        } catch (const IpamError&) {
            break;  // no further free offset: keep the last one found
        }
    }
    return d;
}

// How many offsets `runs` holds (the entries of a pool as read).
std::size_t taken_count(const MemoryRuns& runs) {
    uint128 n = 0;
    for (const auto& [lo, hi] : runs.all()) n += hi - lo + 1;
    return static_cast<std::size_t>(n);
}

}  // namespace

KubeStore::KubeStore(KubeConfig config, Deadline deadline, std::string journal_dir, RetryPolicy policy)
    : api_(std::move(config), deadline, policy), journal_dir_(std::move(journal_dir)) {}

std::optional<PoolObject> KubeStore::read_pool(const PoolKey& key, const EntrySelector* select) {
    const std::string path = object_path(ns(), kPools, key.name());
    const HttpResponse r = api_.call("GET", path);
    if (r.status == 200) return parse_pool_body(r.body, key.network_name, select);
    if (r.status == 404 && object_not_found(parse_status(r.status, r.body))) return std::nullopt;
    api_.fail("GET " + path, r);
}

PoolObject KubeStore::read_or_create_pool(const PoolKey& key, const EntrySelector* select,
                                          const std::string& nsp_name) {
    for (int attempt = 0;; ++attempt) {
        if (auto pool = read_pool(key, select)) {
            if (pool->dump.pool.range != key.range) {
                throw IpamError(codes::io_failure, "IPPool " + key.name() + " in " + ns() + " has spec.range " +
                                                       pool->dump.pool.range.str() + ", expected " + key.range.str());
            }
            return std::move(*pool);
        }
        // First use: create it empty, unless node slices hold the range (mode_guard.hpp). Losing
        // the race to another creator (409) is fine: read theirs.
        guard_single_pool_against_slices(api_, ns(), key, nsp_name);
        const std::string path = collection_path(ns(), kPools);
        const HttpResponse r = api_.call("POST", path, new_pool(ns(), key).dump());
        if (r.status == 201 || r.status == 200) return parse_pool_body(r.body, key.network_name, select);
        if (r.status != 409) api_.fail("POST " + path + " (create IPPool " + key.name() + ")", r);
        if (attempt >= 3) api_.backoff(attempt, "IPPool " + key.name() + " keeps being created and deleted");
    }
}

KubeStore::PatchOutcome KubeStore::try_patch(const PoolObject& pool, const std::vector<PoolChange>& changes,
                                             bool whole_pool) {
    const std::string path = object_path(ns(), kPools, pool.dump.pool.name());
    const std::uint64_t sent_before = api_.requests();
    const long connects_before = api_.connections();
    // The answer's body (the patched pool) is not used: asked for as metadata only, and dropped.
    const HttpResponse r = api_.call("PATCH", path, pool_patch(pool, changes, whole_pool).dump(), kJsonPatch,
                                     RequestOptions{kMetadataOnly, true});
    if (r.status == 200) return PatchOutcome::applied;
    // 422: a test failed (the entries changed since read); 409: a server that checks the same as
    // a precondition. 404: deleted meanwhile (re-read recreates it). When the PATCH may have been
    // sent more than once (our retry after a lost answer or a 5xx, or the HTTP client's own silent resend
    // on a new connection when a kept-alive one closed without answering), the entry that failed
    // the test may be our own first try.
    const bool resent = api_.requests() - sent_before > 1 || api_.connections() != connects_before;
    if (r.status == 422 || r.status == 409) return resent ? PatchOutcome::unsure : PatchOutcome::lost;
    if (r.status == 404 && object_not_found(parse_status(r.status, r.body))) return PatchOutcome::gone;
    if (object_too_large(parse_status(r.status, r.body))) {
        throw pool_too_large(pool.dump.pool.name(), ns(), taken_count(pool.taken));
    }
    api_.fail("PATCH " + path, r);
}

bool KubeStore::patch_pool(const PoolObject& pool, const std::vector<PoolChange>& changes, bool whole_pool) {
    return try_patch(pool, changes, whole_pool) == PatchOutcome::applied;
}

bool KubeStore::reserve(std::string_view network_name, const base::IpAddress& ip, const Owner& owner) {
    const std::string name = reservation_object_name(network_name, ip);
    for (int attempt = 0;; ++attempt) {
        const std::string path = collection_path(ns(), kReservations);
        const HttpResponse r = api_.call("POST", path, new_reservation(ns(), network_name, ip, owner).dump());
        if (r.status == 201 || r.status == 200) return true;
        if (r.status != 409) api_.fail("POST " + path + " (reserve " + ip.str() + ")", r);
        // It exists: ours (an earlier attempt whose answer was lost, a re-ADD) or someone else's.
        const std::string obj = object_path(ns(), kReservations, name);
        const HttpResponse g = api_.call("GET", obj);
        if (g.status == 200) return reservation_held_by(response_object(g, "GET " + obj), owner);
        if (g.status != 404) api_.fail("GET " + obj, g);
        api_.backoff(attempt, "reservation " + name + " was deleted while being created");  // gone again: retry
    }
}

void KubeStore::drop_reservation(std::string_view network_name, const base::IpAddress& ip, const Owner& owner) {
    const std::string path = object_path(ns(), kReservations, reservation_object_name(network_name, ip));
    for (int attempt = 0;; ++attempt) {
        const HttpResponse g = api_.call("GET", path);
        if (g.status == 404) {
            const ApiStatus s = parse_status(g.status, g.body);
            if (object_not_found(s)) return;
            api_.fail("GET " + path, g);
        }
        if (g.status != 200) api_.fail("GET " + path, g);
        const json reservation = response_object(g, "GET " + path);
        // Another pod's reservation of the same address (an overlapping pool) is not ours to delete.
        if (!reservation_held_by(reservation, owner)) return;
        const HttpResponse d = api_.call("DELETE", path, delete_preconditions(reservation).dump());
        if (d.status == 200 || d.status == 202) return;
        if (d.status == 404 && object_not_found(parse_status(d.status, d.body))) return;
        if (d.status != 409) api_.fail("DELETE " + path, d);
        api_.backoff(attempt, "reservation " + path + " changed while being deleted");  // precondition failed: re-read
    }
}

void KubeStore::unwind(const PoolKey& key, uint128 offset, const Owner& owner) {
    const EntrySelector mine{owner.container_id, owner.podref, owner.ifname};
    for (int attempt = 0;; ++attempt) {
        auto pool = read_pool(key, &mine);
        if (!pool) return;
        auto it = pool->dump.allocations.find(offset);
        if (it == pool->dump.allocations.end() || it->second != owner) return;  // not (or no longer) ours
        if (patch_pool(*pool, {{offset, std::nullopt, owner}})) return;
        api_.backoff(attempt, "taking " + address_of(key, offset).str() + " out of IPPool " + key.name() + " again");
    }
}

Allocation KubeStore::allocate(const AllocateRequest& request) {
    const PoolKey key = request.pool();
    const Owner& owner = request.owner;
    journal_add(request.network, {owner.container_id, owner.ifname});
    // A release DEL left for the agent is this attachment's: the ADD takes its entry over (it
    // re-uses what the pool still holds for it), so the record must not release it later.
    drop_deferred({owner.container_id, owner.ifname});
    // Decisions need every taken offset but only this attachment's own entries.
    const EntrySelector mine{owner.container_id, owner.podref, owner.ifname};
    MemoryRuns foreign;  // offsets whose reservation another pod holds (an overlapping pool has them)
    // Only a lost write race spreads the next pick; skipping a foreign reservation must still give
    // the lowest free address (whereabouts' order), or the result would depend on timing.
    int losses = 0;
    std::optional<PoolObject> pool;  // the view decisions are made on; empty: read it (again)
    MemoryRuns lost;                 // offsets of `pool` lost to other writers since it was read
    int writes_on_view = 0;
    for (int attempt = 0;; ++attempt) {
        if (!pool) {
            // The NodeSlicePool node_slice_size would use for this network (its name rule).
            pool =
                read_or_create_pool(key, &mine, request.network_name.empty() ? request.network : request.network_name);
            lost = MemoryRuns();
            writes_on_view = 0;
        }
        RunsCoverage held_cov(pool->taken), foreign_cov(foreign), lost_cov(lost);
        Coverage* taken[] = {&held_cov, &foreign_cov, &lost_cov};

        auto existing = pool->held_by(owner.podref, owner.ifname);
        const bool existing_lost = existing && foreign.contains(existing->first);
        Decision d;
        try {
            d = decide(request.range, existing && !existing_lost ? std::optional(existing->first) : std::nullopt,
                       request.requested, taken);
        } catch (const IpamError& e) {
            // Full only without the offsets lost on this view (a 409 does not prove they are
            // taken): a fresh read decides.
            if (e.code != codes::range_full || lost.run_count() == 0) throw;
            pool.reset();
            continue;
        }
        // After a lost race, concurrent callers that re-read the same pool would all pick the
        // same lowest free address again: spread them over the next free ones instead.
        if (losses > 0 && !d.reuse && !request.requested) d = spread(request.range, d, taken, spread_span(losses));
        const bool drop = existing && (d.drop_existing || existing_lost) && !(d.reuse && d.offset == existing->first);

        std::vector<PoolChange> changes;
        if (drop) changes.push_back({existing->first, std::nullopt, existing->second});
        const bool write = !d.reuse || existing->second.container_id != owner.container_id;
        if (write) changes.push_back({d.offset, owner, d.reuse ? std::optional(existing->second) : std::nullopt});
        if (!changes.empty()) {
            const PatchOutcome outcome = try_patch(*pool, changes);
            if (outcome != PatchOutcome::applied) {
                ++losses;
                ++writes_on_view;
                // A failed test of a plain add (sent once) says that this one offset was taken by
                // someone else since the read;
                // the rest of the view is what a re-read would mostly show too (the pool changes
                // around its lowest free offsets, which the spread skips), so the first retry
                // decides on the same view without it, saving the GET. A second loss re-reads.
                const bool keep_view = outcome == PatchOutcome::lost && changes.size() == 1 && !d.reuse &&
                                       !request.requested && writes_on_view < 2;
                if (keep_view) {
                    lost.insert(d.offset);
                } else {
                    pool.reset();
                }
                api_.backoff(attempt, "IPPool " + key.name() + " changed by concurrent writers");
                continue;
            }
        }
        // The pool holds the address now. From here on, a failure takes it out again.
        base::failpoint(base::Failpoint::add_after_pool_write);
        const base::IpAddress ip = address_of(key, d.offset);
        try {
            if (drop) drop_reservation(key.network_name, address_of(key, existing->first), existing->second);
            if (request.overlapping_check && !reserve(key.network_name, ip, owner)) {
                // An overlapping pool of the same network_name handed this address out: skip it.
                unwind(key, d.offset, owner);
                foreign.insert(d.offset);
                losses = 0;
                pool.reset();
                if (request.requested) {
                    throw IpamError(codes::address_in_use, "static IP " + ip.str() +
                                                               " is reserved by another pod "
                                                               "(OverlappingRangeIPReservation " +
                                                               reservation_object_name(key.network_name, ip) + ")");
                }
                continue;
            }
        } catch (...) {
            try {
                unwind(key, d.offset, owner);
            } catch (...) {
                // The original error is the one to report; the runtime's DEL removes what is left.
            }
            throw;
        }
        return make_allocation(key, d.offset, owner, request.network, d.reuse);
    }
}

std::vector<Allocation> KubeStore::release(std::span<const PoolKey> pools, const AttachmentId& attachment) {
    std::vector<Allocation> released;
    std::string deferred;  // why the API server did not take a pool's release (recorded for the agent)
    for (const PoolKey& key : pools) {
        try {
            auto r = release_in(key, attachment);
            released.insert(released.end(), r.begin(), r.end());
        } catch (const IpamError& e) {
            // A configuration error is the caller's to fix; anything the API server did (or did not
            // answer) within the budget is left to the node agent rather than wedge the teardown.
            if (e.code == codes::invalid_config || backlog_dir().empty()) throw;
            defer_release(key, attachment);
            deferred += (deferred.empty() ? "" : "; ") + ("IPPool " + key.name() + ": " + e.msg);
        }
    }
    journal_remove("", attachment);
    if (!deferred.empty()) {
        throw ReleaseDeferred("DEL of " + attachment.container_id + " " + attachment.ifname +
                              ": the Kubernetes API "
                              "server did not take the release (" +
                              deferred + "); recorded in " + backlog_dir() +
                              " for the node agent (rdmanetctl agent) to finish once the API server answers");
    }
    return released;
}

void KubeStore::defer_release(const PoolKey& key, const AttachmentId& attachment) {
    SliceBacklog backlog(backlog_dir());
    for (const auto& [marker, change] : backlog.pending())
        if (change.pool == key && change.container_id == attachment.container_id && change.ifname == attachment.ifname)
            return;
    backlog.add(SliceChange{SliceChange::Op::remove, ns(), key, attachment.container_id, attachment.ifname, "", {}});
}

void KubeStore::drop_deferred(const AttachmentId& attachment) {
    if (backlog_dir().empty()) return;
    SliceBacklog backlog(backlog_dir());
    if (backlog.empty()) return;
    for (const auto& [marker, change] : backlog.pending())
        if (change.container_id == attachment.container_id && change.ifname == attachment.ifname)
            backlog.remove(marker);
}

std::string deferred_releases_dir(const std::string& data_dir) { return data_dir + "/kubernetes/backlog"; }

PublishReport finish_deferred_releases(const KubeConfig& kubeconfig, const std::string& data_dir,
                                       std::chrono::milliseconds budget) {
    PublishReport report;
    SliceBacklog backlog(deferred_releases_dir(data_dir));
    if (backlog.empty()) return report;
    const auto pending = backlog.pending();
    const Deadline deadline = Deadline::in(budget);
    for (std::size_t i = 0; i < pending.size(); ++i) {
        const auto& [marker, change] = pending[i];
        KubeConfig config = kubeconfig;
        config.namespace_ = change.ns;
        try {
            KubeStore store(config, deadline, "");
            const PoolKey keys[] = {change.pool};
            store.release(keys, AttachmentId{change.container_id, change.ifname});
            backlog.remove(marker);
            ++report.published;
        } catch (const IpamError& e) {
            report.remaining = static_cast<int>(pending.size() - i);
            report.error = e.msg;
            if (const auto* denied = dynamic_cast<const AccessDenied*>(&e)) report.access_denied = denied->http;
            return report;
        }
    }
    return report;
}

std::vector<Allocation> KubeStore::release_in(const PoolKey& key, const AttachmentId& attachment) {
    std::vector<Allocation> released;
    const EntrySelector mine{attachment.container_id, {}, attachment.ifname};
    for (int attempt = 0;; ++attempt) {
        auto pool = read_pool(key, &mine);
        if (!pool) break;
        const auto entries = pool->held_by_attachment(attachment);
        if (entries.empty()) break;
        // Reservations first: see kube_store.hpp (a crash in between leaves what DEL finds).
        for (const auto& [offset, owner] : entries) drop_reservation(key.network_name, address_of(key, offset), owner);
        base::failpoint(base::Failpoint::del_after_reservation_drop);
        std::vector<PoolChange> changes;
        for (const auto& entry : entries) changes.push_back({entry.first, std::nullopt, entry.second});
        if (patch_pool(*pool, changes)) {
            for (const auto& [offset, owner] : entries)
                released.push_back(make_allocation(key, offset, owner, "", false));
            break;
        }
        api_.backoff(attempt, "IPPool " + key.name() + " changed by concurrent writers");
    }
    return released;
}

std::optional<Allocation> KubeStore::find(const PoolKey& key, std::string_view podref, std::string_view ifname) {
    const EntrySelector wanted{{}, podref, ifname};
    auto pool = read_pool(key, &wanted);
    if (!pool) return std::nullopt;
    auto held = pool->held_by(podref, ifname);
    if (!held) return std::nullopt;
    return make_allocation(key, held->first, held->second, "", false);
}

std::vector<json> KubeStore::list(std::string_view plural) {
    const std::string path = collection_path(ns(), plural);
    const HttpResponse r = api_.call("GET", path, {}, "application/json", RequestOptions{{}, false, kMaxListBody});
    if (r.status != 200) api_.fail("GET " + path, r);
    json body = response_object(r, "GET " + path);
    std::vector<json> out;
    if (body.contains("items") && body["items"].is_array()) {
        for (auto& item : body["items"]) out.push_back(std::move(item));
    }
    return out;
}

std::vector<PoolKey> KubeStore::pools() {
    std::vector<PoolKey> keys;
    for (const auto& item : list(kPools)) {
        if (!item.contains("spec") || !item["spec"].is_object()) continue;
        auto range = base::IpNetwork::parse(item["spec"].value("range", ""));
        const std::string name = item.contains("metadata") ? item["metadata"].value("name", "") : "";
        if (!range) continue;
        if (auto nn = network_name_of(name, range->masked())) keys.push_back(PoolKey{*nn, range->masked()});
    }
    std::sort(keys.begin(), keys.end());
    return keys;
}

PoolDump KubeStore::dump(const PoolKey& key) {
    auto pool = read_pool(key);
    if (!pool) return PoolDump{key, {}};
    return pool->dump;
}

// ---- node journal (what this node allocated, for CNI GC) ----

void KubeStore::journal_add(std::string_view network, const AttachmentId& a) {
    if (journal_dir_.empty()) return;
    if (!safe_component(a.container_id) || !safe_component(a.ifname)) {
        config_error("container id \"" + a.container_id + "\" / interface \"" + a.ifname +
                     "\" contain characters other than letters, digits, '-', '_' and '.'");
    }
    std::error_code ec;
    std::filesystem::create_directories(journal_dir_, ec);
    const std::string path = journal_dir_ + "/" + a.container_id + ":" + a.ifname;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        throw IpamError(codes::io_failure, "ipam node journal " + path + ": " + std::strerror(errno));
    }
    const std::string text(network);
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!ok) throw IpamError(codes::io_failure, "ipam node journal " + path + ": short write");
}

void KubeStore::journal_remove(std::string_view, const AttachmentId& a) {
    if (journal_dir_.empty() || !safe_component(a.container_id) || !safe_component(a.ifname)) return;
    ::unlink((journal_dir_ + "/" + a.container_id + ":" + a.ifname).c_str());
}

std::vector<Allocation> KubeStore::gc(std::string_view network, std::span<const PoolKey> pools,
                                      std::span<const AttachmentId> valid) {
    std::vector<Allocation> released;
    if (journal_dir_.empty()) return released;
    const std::set<AttachmentId> keep(valid.begin(), valid.end());
    std::error_code ec;
    std::vector<AttachmentId> stale;
    for (const auto& entry : std::filesystem::directory_iterator(journal_dir_, ec)) {
        const std::string name = entry.path().filename().string();
        const auto colon = name.find(':');
        if (colon == std::string::npos) continue;
        std::ifstream in(entry.path());
        std::stringstream ss;
        ss << in.rdbuf();
        if (ss.str() != network) continue;
        AttachmentId a{name.substr(0, colon), name.substr(colon + 1)};
        if (!keep.contains(a)) stale.push_back(std::move(a));
    }
    int deferred = 0;
    for (const auto& a : stale) {
        try {
            auto r = release(pools, a);
            released.insert(released.end(), r.begin(), r.end());
        } catch (const ReleaseDeferred&) {
            ++deferred;  // recorded for the agent; reported once, after the others
        }
    }
    if (deferred > 0) {
        throw ReleaseDeferred("GC: the Kubernetes API server did not take " + std::to_string(deferred) +
                              " release(s); recorded in " + backlog_dir() + " for the node agent to finish");
    }
    return released;
}

}  // namespace rdmanet::ipam::kube
