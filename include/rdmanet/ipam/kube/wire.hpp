#pragma once
// whereabouts' wire format (docs/ipam.md, Wire format): URL paths, IPPool and
// OverlappingRangeIPReservation objects, and the JSON patches that change a pool. Pure functions,
// so that what goes on the wire is unit-tested byte for byte.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/core/runs.hpp"
#include "rdmanet/ipam/core/store.hpp"

namespace rdmanet::ipam::kube {

inline constexpr std::string_view kGroup = "whereabouts.cni.cncf.io";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "whereabouts.cni.cncf.io/v1alpha1";
inline constexpr std::string_view kPools = "ippools";
inline constexpr std::string_view kReservations = "overlappingrangeipreservations";
inline constexpr std::string_view kJsonPatch = "application/json-patch+json";
// Accept header of a pool PATCH: the kube-apiserver answers a write with the whole object (the
// full pool, ~700 kB at 10k entries) unless asked for its metadata only, as client-go's metadata
// client asks (the apiserver's response transform, served for custom resources too); a server
// that does not know the transform answers plain JSON, which the client drops unread anyway.
inline constexpr std::string_view kMetadataOnly =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

// /apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/<ns>/<plural>[/<name>]
std::string collection_path(std::string_view ns, std::string_view plural);
std::string object_path(std::string_view ns, std::string_view plural, std::string_view name);

// Which entries of a pool read keep their owner. A read always records every entry's offset
// (PoolObject::taken: what the allocator needs), but the owners are three strings per entry -
// on a pool of 10k entries making them was most of an ADD's client CPU, and an ADD or DEL only
// ever looks at the entries of its own attachment. Selected: entries with this ifname and this
// podref or this container id.
struct EntrySelector {
    std::string_view container_id;
    std::string_view podref;
    std::string_view ifname;
};

// A pool as read: its resourceVersion and its allocations. Nothing else of the object is kept:
// we only ever patch /spec/allocations/<offset>, so unknown fields stay untouched on the server.
struct PoolObject {
    std::string resource_version;
    PoolDump dump;                    // allocations: every entry, or only the selected ones (complete false)
    MemoryRuns taken;                 // the offset of every entry
    bool has_allocations_map = true;  // false: spec.allocations absent/null, a patch must add it first
    bool complete = true;             // dump.allocations holds every entry

    // Only selected entries are seen when the read had a selector: select at least these.
    std::optional<std::pair<uint128, Owner>> held_by(std::string_view podref, std::string_view ifname) const;
    std::vector<std::pair<uint128, Owner>> held_by_attachment(const AttachmentId& a) const;
};

// Validates what whereabouts requires (spec.range, allocations keyed by decimal offset inside the
// range). Throws IpamError(io_failure) naming the pool when the object is malformed.
// parse_pool_body reads the response text directly (SAX, no JSON tree: a GET of a 10k-entry pool
// is parsed per ADD); with a selector only the selected entries keep their owner. parse_pool is
// the same for an object already parsed (a list item), keeping every entry.
PoolObject parse_pool_body(std::string_view body, std::string network_name, const EntrySelector* select = nullptr);
PoolObject parse_pool(const nlohmann::json& object, std::string network_name);

// The network_name a pool object belongs to, from its name and spec.range (name =
// [<network_name>-]<normalised range>); nullopt when the name does not fit the range.
std::optional<std::string> network_name_of(std::string_view object_name, const base::IpNetwork& range);

// A new, empty pool (created on first use).
nlohmann::json new_pool(std::string_view ns, const PoolKey& key);
nlohmann::json owner_json(const Owner& owner);

// One change of a pool's allocations map.
struct PoolChange {
    uint128 offset;
    std::optional<Owner> set;     // nullopt: remove the entry
    std::optional<Owner> expect;  // what the entry must hold now; nullopt: it must be absent
};

// RFC 6902 patch. Each change first tests the entry it touches: `{"op":"test","path":
// "/spec/allocations/<off>","value":null}` (absent: the kube-apiserver's JSON patch treats a
// missing member as null, as whereabouts' own patches rely on) or the expected {id,podref,ifname};
// then "add" sets the entry, "remove" deletes it. A failed test is 422 and means re-read.
//
// Why per entry rather than per pool (a test of /metadata/resourceVersion): the apiserver applies
// a patch to the object's latest version atomically, so the entry tests are exactly the condition
// the decision depends on, while writers that touch different addresses of one pool no longer
// invalidate each other - with a pool-wide test, N concurrent ADDs on one pool cost O(N) retries
// each. `whole_pool` adds the resourceVersion test too (reconcile: its decision depends on the
// whole pool, and on the pods read after it). A pool whose allocations map is missing gets one
// under the resourceVersion test as well.
nlohmann::json pool_patch(const PoolObject& pool, const std::vector<PoolChange>& changes, bool whole_pool = false);

// OverlappingRangeIPReservation for `ip`, named as whereabouts names it.
nlohmann::json new_reservation(std::string_view ns, std::string_view network_name, const base::IpAddress& ip,
                               const Owner& owner);
// Whether a reservation object is held by podref+ifname (whereabouts keys reservations that way).
bool reservation_held_by(const nlohmann::json& reservation, const Owner& owner);

// DeleteOptions with preconditions: the DELETE fails with 409 if the object changed since read.
nlohmann::json delete_preconditions(const nlohmann::json& object);

}  // namespace rdmanet::ipam::kube
