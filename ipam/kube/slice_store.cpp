// Node-slice mode of the Kubernetes datastore: see slice_store.hpp.
#include "rdmanet/base/atomic_file.hpp"
#include "rdmanet/base/flock.hpp"
#include "rdmanet/ipam/kube/slice_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/access_denied_record.hpp"
#include "rdmanet/ipam/kube/mode_guard.hpp"
#include "rdmanet/ipam/kube/node_slices.hpp"
#include "rdmanet/ipam/kube/slice_held.hpp"
#include "rdmanet/ipam/kube/wire.hpp"
#include "rdmanet/base/failpoint.hpp"

namespace rdmanet::ipam::kube {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using HeldFile = HeldSlices;

std::string held_path(const std::string& dir, const SliceSettings& s) {
    return held_file_path(dir, s.pool_name, s.node);
}

HeldFile read_held(const std::string& dir, const SliceSettings& s, const Range& parent) {
    auto held = read_held_file(dir, s.pool_name, s.node);
    if (!held) return HeldFile{s.pool_name, s.node, "", "", {}, {}};
    const std::string want_size = "/" + std::to_string(s.prefix);
    if (held->range != parent.cidr.str() || held->slice_size != want_size) {
        config_error(
            "this node holds slices of NodeSlicePool " + s.pool_name + " for range " + held->range +
            " and node_slice_size \"" + held->slice_size + "\" (" + held_path(dir, s) +
            "), but the configuration now has " + parent.cidr.str() + " and \"" + want_size +
            "\": a network's range and slice size cannot change while nodes hold slices; use a new network_name");
    }
    return std::move(*held);
}

void write_held(const std::string& dir, const SliceSettings& s, const Range& parent, HeldFile h) {
    h.pool_name = s.pool_name;
    h.node = s.node;
    h.range = parent.cidr.str();
    h.slice_size = "/" + std::to_string(s.prefix);
    write_held_file(dir, h);
}

// An exclusive flock on the node's held file, held for the object's lifetime. A holder keeps it
// at most through one claim (kClaimBudget against the API server), so waiting longer than that
// means a hung process: the ADD gives up with try_again instead of hanging.
inline constexpr std::chrono::milliseconds kNodeLockTimeout = kClaimBudget + std::chrono::seconds(5);

class NodeLock {
public:
    explicit NodeLock(const std::string& path)
        : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) {
        if (fd_ < 0) throw IpamError(codes::io_failure, "cannot lock " + path + ": " + std::strerror(errno));
        const int err = base::flock_exclusive_within(fd_, kNodeLockTimeout, std::chrono::milliseconds(20));
        if (err == ETIMEDOUT) {
            ::close(fd_);
            throw IpamError(codes::try_again, "timed out after " + std::to_string(kNodeLockTimeout.count()) +
                                                  " ms waiting for " + path +
                                                  ": another process of this node holds it");
        }
        if (err != 0) {
            ::close(fd_);
            throw IpamError(codes::io_failure, "cannot lock " + path + ": " + std::strerror(err));
        }
    }
    ~NodeLock() {
        if (fd_ >= 0) ::close(fd_);
    }
    NodeLock(const NodeLock&) = delete;
    NodeLock& operator=(const NodeLock&) = delete;

private:
    int fd_;
};

// The node's held files (held/<NodeSlicePool>@<node>.json), each with the settings and range it
// was written for; unreadable ones are skipped.
struct HeldFileRef {
    SliceSettings settings;
    Range parent;
};

std::vector<HeldFileRef> held_files(const std::string& dir) {
    std::vector<HeldFileRef> out;
    for (const auto& [pool, node] : held_file_names(dir)) {
        std::optional<HeldSlices> h;
        try {
            h = read_held_file(dir, pool, node);
        } catch (const IpamError&) {
            continue;  // rdmanetctl doctor reports an unreadable held file
        }
        if (!h) continue;
        const auto range = base::IpNetwork::parse(h->range);
        const std::string& size = h->slice_size;
        if (!range || size.size() < 2 || size[0] != '/') continue;
        HeldFileRef ref;
        ref.settings = SliceSettings{pool, node, std::atoi(size.c_str() + 1)};
        ref.parent.cidr = range->masked();
        out.push_back(std::move(ref));
    }
    return out;
}

SliceScope scope_of(const KubeApi& api, const SliceSettings& s) {
    return {api.config().namespace_, s.pool_name, s.node, s.prefix};
}

// Re-reads the NodeSlicePool and records as revoked every slice of the held file that it no
// longer lists for this node; returns those newly revoked.
std::vector<base::IpNetwork> mark_revoked(KubeApi& api, const std::string& dir, const SliceSettings& s,
                                          const Range& parent) {
    const auto pool = read_node_slice_pool(api, scope_of(api, s), parent);
    NodeLock lock(held_path(dir, s) + ".lock");
    HeldFile h = read_held(dir, s, parent);
    std::vector<base::IpNetwork> newly;
    for (const auto& slice : h.slices) {
        const bool still_mine = pool && pool->holder(slice) == s.node;
        if (!still_mine && std::find(h.revoked.begin(), h.revoked.end(), slice) == h.revoked.end()) {
            h.revoked.push_back(slice);
            newly.push_back(slice);
        }
    }
    if (!newly.empty()) write_held(dir, s, parent, h);
    return newly;
}

// The guard of publication (slice_publisher.hpp): before a missing slice IPPool is created,
// whether the node still holds its slice per the NodeSlicePool. A pool key that no held file
// knows is not a slice this node ever recorded: nothing to check.
bool still_held(KubeApi& api, const std::string& dir, const PoolKey& key) {
    for (const auto& f : held_files(dir)) {
        const SliceSettings& s = f.settings;
        if (key.network_name != s.node && key.network_name != s.pool_name + "-" + s.node) continue;
        const HeldFile h = read_held(dir, s, f.parent);
        if (std::find(h.slices.begin(), h.slices.end(), key.range) == h.slices.end()) continue;
        if (std::find(h.revoked.begin(), h.revoked.end(), key.range) != h.revoked.end()) return false;
        const auto newly = mark_revoked(api, dir, s, f.parent);
        return std::find(newly.begin(), newly.end(), key.range) == newly.end();
    }
    return true;
}

Range range_of(const PoolKey& key) {
    Range r;
    r.cidr = key.range;
    return r;
}

// Sets the API's deadline to at most `budget` from now for the object's lifetime.
class Bounded {
public:
    Bounded(KubeApi& api, std::chrono::milliseconds budget) : api_(api), saved_(api.deadline()) {
        const Deadline cap = Deadline::in(budget);
        if (cap.at < saved_.at) api.set_deadline(cap);
    }
    ~Bounded() { api_.set_deadline(saved_); }

private:
    KubeApi& api_;
    Deadline saved_;
};

// ADD in node-slice mode when the API server refuses the node's credentials or permissions: no
// address is handed out. Serving from the node's own slices would work for a while, but every
// allocation would be one the cluster cannot see (reconcile, other nodes' checks, doctor) and a
// revoked or expired token would go unnoticed until something else broke; single-pool mode fails
// the same way.
AccessDenied add_refused(const AccessDenied& e) {
    return AccessDenied(
        "node-slice mode hands out no address it cannot publish, and the Kubernetes API server "
        "refused this node's credentials: " +
            e.msg,
        e.http);
}

}  // namespace

std::string slices_dir(const std::string& data_dir) { return data_dir + "/kubernetes/slices"; }

PublishReport publish_pending(const KubeConfig& kubeconfig, const std::string& data_dir,
                              std::chrono::milliseconds budget) {
    const std::string dir = slices_dir(data_dir);
    SliceBacklog backlog(dir + "/backlog");
    if (backlog.empty()) return {};
    KubeApi api(kubeconfig, Deadline::in(budget));
    SqliteStore local(dir);
    const SliceGuard guard = [&](const PoolKey& key) { return still_held(api, dir, key); };
    PublishReport r = publish_pending(api, local, backlog, &guard);
    if (r.access_denied) {
        record_access_denied(dir, AccessDenied(r.error, r.access_denied));
    } else if (r.published > 0) {
        clear_access_denied(dir);
    }
    return r;
}

std::vector<HeldSliceState> held_slices(const std::string& data_dir) {
    const std::string dir = slices_dir(data_dir);
    std::vector<HeldSliceState> out;
    for (const auto& f : held_files(dir)) {
        const HeldFile h = read_held(dir, f.settings, f.parent);
        HeldSliceState st{f.settings.pool_name, f.settings.node, f.parent.cidr, f.settings.prefix, {}, h.revoked};
        for (const auto& slice : h.slices) {
            if (std::find(h.revoked.begin(), h.revoked.end(), slice) == h.revoked.end()) st.held.push_back(slice);
        }
        out.push_back(std::move(st));
    }
    return out;
}

std::vector<std::string> recheck_held_slices(const KubeConfig& kubeconfig, const std::string& data_dir,
                                             std::chrono::milliseconds budget) {
    const std::string dir = slices_dir(data_dir);
    std::vector<std::string> newly;
    const auto files = held_files(dir);
    if (files.empty()) return newly;
    KubeApi api(kubeconfig, Deadline::in(budget));
    bool asked = false;
    for (const auto& f : files) {
        if (read_held(dir, f.settings, f.parent).slices.empty()) continue;
        try {
            for (const auto& slice : mark_revoked(api, dir, f.settings, f.parent)) {
                newly.push_back(f.settings.pool_name + " " + slice.str() + " " + f.settings.node);
            }
        } catch (const AccessDenied& e) {
            record_access_denied(dir, e);
            throw;
        }
        asked = true;
    }
    if (asked) clear_access_denied(dir);
    return newly;
}

SliceStore::SliceStore(KubeConfig config, Deadline deadline, const std::string& data_dir, SliceSettings settings)
    : api_(std::move(config), deadline),
      dir_(slices_dir(data_dir)),
      local_(dir_),
      backlog_(dir_ + "/backlog"),
      settings_(std::move(settings)) {
    std::error_code ec;
    fs::create_directories(dir_ + "/held", ec);
    if (ec) throw IpamError(codes::io_failure, "cannot create " + dir_ + "/held: " + ec.message());
}

SliceScope SliceStore::scope() const {
    return {api_.config().namespace_, settings_.pool_name, settings_.node, settings_.prefix};
}

std::vector<base::IpNetwork> SliceStore::held(const Range& parent) {
    HeldFile h = read_held(dir_, settings_, parent);
    std::vector<base::IpNetwork> out;
    for (const auto& s : h.slices) {
        if (std::find(h.revoked.begin(), h.revoked.end(), s) == h.revoked.end()) out.push_back(s);
    }
    return out;
}

std::vector<base::IpNetwork> SliceStore::revoked(const Range& parent) {
    return read_held(dir_, settings_, parent).revoked;
}

AllocateRequest SliceStore::slice_request(const AllocateRequest& request, const base::IpNetwork& slice) const {
    AllocateRequest r = request;
    r.range = slice_range(request.range, slice);
    r.network_name = slice_pool_key(request.network_name, settings_.node, slice).network_name;
    r.overlapping_check = false;
    r.requested.reset();
    if (request.requested) {
        const auto ip = request.range.address_at(*request.requested);
        if (slice.contains(ip)) r.requested = r.range.offset_of(ip);
    }
    return r;
}

base::IpNetwork SliceStore::claim(const AllocateRequest& request, const std::vector<base::IpNetwork>& full) {
    const Range& parent = request.range;
    NodeLock lock(held_path(dir_, settings_) + ".lock");
    HeldFile h = read_held(dir_, settings_, parent);
    // Another process of this node may have claimed one while this one waited for the lock.
    for (const auto& s : h.slices) {
        const bool usable = std::find(full.begin(), full.end(), s) == full.end() &&
                            std::find(h.revoked.begin(), h.revoked.end(), s) == h.revoked.end();
        if (usable) return s;
    }
    std::vector<base::IpNetwork> unusable = full;
    unusable.insert(unusable.end(), h.revoked.begin(), h.revoked.end());
    Bounded bound(api_, kClaimBudget);
    // The range's single-pool IPPool must hold nothing (mode_guard.hpp).
    guard_slices_against_single_pool(api_, api_.config().namespace_, PoolKey{request.network_name, parent.cidr},
                                     settings_.pool_name);
    const base::IpNetwork slice = claim_slice(api_, scope(), parent, unusable);
    if (std::find(h.slices.begin(), h.slices.end(), slice) == h.slices.end()) {
        adopt_published(request, slice);  // before the slice is recorded: a crash in between adopts again
        h.slices.push_back(slice);
    }
    write_held(dir_, settings_, parent, h);
    base::failpoint(base::Failpoint::add_after_slice_claim);
    return slice;
}

void SliceStore::adopt_published(const AllocateRequest& request, const base::IpNetwork& slice) {
    const PoolKey key = slice_pool_key(request.network_name, settings_.node, slice);
    const std::string path = object_path(api_.config().namespace_, kPools, key.name());
    const HttpResponse r = api_.call("GET", path);
    if (r.status == 404 && object_not_found(parse_status(r.status, r.body))) return;
    if (r.status != 200) api_.fail("GET " + path, r);
    const PoolObject published = parse_pool_body(r.body, key.network_name);
    const auto local = local_.dump(key).allocations;
    // Any offset of the slice but its first and last: an entry is kept whatever the range's
    // exclusions say (it is someone's address).
    AllocateRequest adopt;
    adopt.range.cidr = slice.masked();
    adopt.range.field = "slice IPPool " + key.name();
    const Interval usable = usable_offsets(adopt.range.cidr);
    adopt.range.first = usable.lo;
    adopt.range.last = usable.hi;
    adopt.network_name = key.network_name;
    adopt.overlapping_check = false;
    adopt.network = request.network;
    for (const auto& [offset, owner] : published.dump.allocations) {
        if (local.count(offset) || offset < usable.lo || offset > usable.hi) continue;
        adopt.owner = owner;
        adopt.requested = offset;
        try {
            local_.allocate(adopt);
        } catch (const IpamError& e) {
            if (e.code != codes::address_in_use) throw;  // the same pod+ifname twice: the first one stays
        }
    }
}

void SliceStore::recheck(const Range& parent) {
    recheck_due_ = false;
    Bounded bound(api_, kPublishBudget);
    mark_revoked(api_, dir_, settings_, parent);
}

bool SliceStore::still_held_here(const PoolKey& key) { return still_held(api_, dir_, key); }

void SliceStore::note_denied(const AccessDenied& e) {
    unreachable_ = true;
    denied_ = e;
    record_access_denied(dir_, e);
}

PublishReport SliceStore::publish() {
    Bounded bound(api_, kPublishBudget);
    const SliceGuard guard = [this](const PoolKey& key) { return still_held_here(key); };
    PublishReport r = publish_pending(api_, local_, backlog_, &guard);
    if (r.remaining > 0) unreachable_ = true;
    if (r.access_denied) {
        note_denied(AccessDenied(r.error, r.access_denied));
    } else if (r.published > 0) {
        clear_access_denied(dir_);
    }
    return r;
}

void SliceStore::publish_after_commit(const std::string& marker, const SliceChange& change, bool older_pending) {
    // Deferred: the change stays in the backlog for the node agent's publish_pending. Uniqueness
    // does not depend on publication: the slice is this node's alone (claimed in the
    // NodeSlicePool before any allocation from it, and slices are disjoint), and within it the
    // local store's transaction decides which attachment holds an address; the slice IPPool is
    // only its published copy for whereabouts and the reconcilers.
    if (settings_.defer_publication) return;
    if (unreachable_) return;  // this call already found the API server unreachable: keep order, do not wait again
    if (older_pending) {
        // Older changes first (they include this one): the backlog's order is the node's order.
        if (publish().remaining == 0) recheck_due_ = true;
        return;
    }
    Bounded bound(api_, kPublishBudget);
    try {
        std::string conflict;
        const SliceGuard guard = [this](const PoolKey& key) { return still_held_here(key); };
        publish_change(api_, local_, change, &conflict, &guard);
        backlog_.remove(marker);
        clear_access_denied(dir_);
    } catch (const AccessDenied& e) {
        note_denied(e);  // stays in the backlog; the verb decides (ADD fails, DEL reports it)
    } catch (const IpamError&) {
        unreachable_ = true;  // stays in the backlog
    }
}

Allocation SliceStore::allocate(const AllocateRequest& request) {
    const Range& parent = request.range;
    const bool older_pending = !backlog_.empty();
    if (older_pending && !settings_.defer_publication) {
        if (publish().remaining == 0) recheck(parent);
    }
    if (denied_) throw add_refused(*denied_);
    std::vector<base::IpNetwork> mine = held(parent);
    // A re-ADD of the same pod+ifname keeps its address, in whichever slice it is.
    std::optional<base::IpNetwork> first_try;
    for (const auto& s : mine) {
        if (local_.find(slice_pool_key(request.network_name, settings_.node, s), request.owner.podref,
                        request.owner.ifname)) {
            first_try = s;
            break;
        }
    }
    if (first_try) {
        mine.erase(std::find(mine.begin(), mine.end(), *first_try));
        mine.insert(mine.begin(), *first_try);
    }
    std::vector<base::IpNetwork> full;
    auto try_slice = [&](const base::IpNetwork& slice) -> std::optional<Allocation> {
        if (!slice_has_usable(parent, slice)) return std::nullopt;
        const AllocateRequest r = slice_request(request, slice);
        if (request.requested && !r.requested) return std::nullopt;
        SliceChange change{SliceChange::Op::add, api_.config().namespace_, r.pool(), request.owner.container_id,
                           request.owner.ifname, request.owner.podref,     {}};
        const bool others = !backlog_.empty();
        const std::string marker = backlog_.add(change);
        Allocation a;
        try {
            a = local_.allocate(r);
        } catch (const IpamError& e) {
            backlog_.remove(marker);
            if (e.code == codes::range_full) return std::nullopt;
            throw;
        }
        base::failpoint(base::Failpoint::add_after_slice_commit);
        publish_after_commit(marker, change, others);
        if (denied_) {
            // Refused credentials are no outage: the address is given back here and the ADD fails.
            const PoolKey keys[] = {r.pool()};
            local_.release(keys, AttachmentId{request.owner.container_id, request.owner.ifname});
            backlog_.remove(marker);
            throw add_refused(*denied_);
        }
        base::failpoint(base::Failpoint::add_after_slice_publish);
        // Publication found the slice released (its IPPool deleted by the cluster's reconciler,
        // this node's Node object having been gone): the address may be another node's now.
        // Taken back locally, and the next slice is tried.
        const auto gone = revoked(parent);
        if (std::find(gone.begin(), gone.end(), slice) != gone.end()) {
            const PoolKey keys[] = {r.pool()};
            local_.release(keys, AttachmentId{request.owner.container_id, request.owner.ifname});
            return std::nullopt;
        }
        return a;
    };
    for (const auto& slice : mine) {
        if (auto a = try_slice(slice)) return *a;
        full.push_back(slice);
    }
    if (request.requested) {
        throw IpamError(codes::address_in_use,
                        "static IP " + parent.address_at(*request.requested).str() +
                            " is not free in the slices node " + settings_.node + " holds in " + parent.cidr.str() +
                            " (node_slice_size: a node hands out addresses of its own slices only)");
    }
    for (;;) {
        base::IpNetwork slice;
        try {
            slice = claim(request, full);
        } catch (const IpamError& e) {
            if (e.code != codes::try_again) throw;
            throw IpamError(codes::try_again,
                            "node " + settings_.node + " has no slice of " + parent.cidr.str() +
                                " with a free address and the Kubernetes API server is unreachable to "
                                "claim one (" +
                                e.msg + "); retry later");
        }
        if (auto a = try_slice(slice)) return *a;
        full.push_back(slice);
    }
}

std::vector<Allocation> SliceStore::release(std::span<const PoolKey> pools, const AttachmentId& attachment) {
    if (!backlog_.empty() && !settings_.defer_publication) publish();
    std::vector<Allocation> released;
    for (const PoolKey& parent_key : pools) {
        const Range parent = range_of(parent_key);
        HeldFile h = read_held(dir_, settings_, parent);
        for (const auto& slice : h.slices) {  // revoked ones too: their entries are still released locally
            const PoolKey key = slice_pool_key(parent_key.network_name, settings_.node, slice);
            std::vector<std::pair<uint128, Owner>> entries;
            for (const auto& [offset, owner] : local_.dump(key).allocations) {
                if (owner.container_id == attachment.container_id && owner.ifname == attachment.ifname)
                    entries.emplace_back(offset, owner);
            }
            if (entries.empty()) continue;
            SliceChange change{SliceChange::Op::remove,
                               api_.config().namespace_,
                               key,
                               attachment.container_id,
                               attachment.ifname,
                               "",
                               entries};
            const bool others = !backlog_.empty();
            const std::string marker = backlog_.add(change);
            const PoolKey keys[] = {key};
            auto r = local_.release(keys, attachment);
            released.insert(released.end(), r.begin(), r.end());
            publish_after_commit(marker, change, others);
        }
    }
    if (denied_) {
        throw AccessDenied("released " + attachment.container_id + " " + attachment.ifname +
                               " on this node, but the API server refused to take the release: " + denied_->msg +
                               "; the change waits in " + backlog_.dir() + " until the credentials work again",
                           denied_->http, /*released_locally=*/true);
    }
    return released;
}

std::optional<Allocation> SliceStore::find(const PoolKey& parent_key, std::string_view podref,
                                           std::string_view ifname) {
    for (const auto& slice : held(range_of(parent_key))) {
        if (auto a = local_.find(slice_pool_key(parent_key.network_name, settings_.node, slice), podref, ifname))
            return a;
    }
    return std::nullopt;
}

std::vector<PoolKey> SliceStore::pools() { return local_.pools(); }

PoolDump SliceStore::dump(const PoolKey& pool) { return local_.dump(pool); }

std::vector<Allocation> SliceStore::gc(std::string_view network, std::span<const PoolKey> pools,
                                       std::span<const AttachmentId> valid) {
    // Which attachments of `network` the node's slices hold that are not valid: released one by
    // one, so that each removal is published like a DEL's.
    std::vector<PoolKey> keys;
    for (const PoolKey& parent_key : pools) {
        for (const auto& slice : read_held(dir_, settings_, range_of(parent_key)).slices) {
            keys.push_back(slice_pool_key(parent_key.network_name, settings_.node, slice));
        }
    }
    std::set<AttachmentId> keep(valid.begin(), valid.end()), stale;
    for (const auto& key : keys) {
        for (const auto& [offset, owner] : local_.dump(key).allocations) {
            AttachmentId a{owner.container_id, owner.ifname};
            if (!keep.count(a)) stale.insert(a);
        }
    }
    (void)network;  // the slice pools are the network's own: every stale entry in them is its
    std::vector<Allocation> released;
    for (const auto& a : stale) {
        try {
            auto r = release(pools, a);
            released.insert(released.end(), r.begin(), r.end());
        } catch (const AccessDenied&) {
            // released locally; the refusal is reported once, after the others
        }
    }
    if (denied_) {
        throw AccessDenied("GC released " + std::to_string(stale.size()) +
                               " attachment(s) on this node, but the API "
                               "server refused to take the releases: " +
                               denied_->msg + "; they wait in " + backlog_.dir() + " until the credentials work again",
                           denied_->http, /*released_locally=*/true);
    }
    return released;
}

}  // namespace rdmanet::ipam::kube
