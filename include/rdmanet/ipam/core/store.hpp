#pragma once
// The datastore interface, implemented by the local SQLite store and by the Kubernetes store
// (whereabouts' IPPool objects, optimistic concurrency per pool entry, no global lock).
//
// Contract for every implementation:
//  - Each call is atomic against other processes and other nodes: allocate either durably records
//    the allocation and returns it, or throws and records nothing; release/gc either remove an
//    allocation completely (pool entry and overlap reservation) or not at all.
//  - No global lock: concurrency control is per pool (SQLite: one short write transaction;
//    Kubernetes: read the pool, decide, write with a JSON patch that tests the entries it
//    changes, retry on conflict with jitter). Time bounds (busy timeout, request deadline) are
//    given when the store is opened, and running out of time throws IpamError(codes::try_again).
//  - The decision itself is allocator.hpp's decide(): stores only provide the coverage of taken
//    offsets, so every store hands out addresses in the same order.
//  - Pool = (network_name, normalised CIDR), as whereabouts keys IPPools; allocations are keyed by
//    the decimal offset from the network address with id (container id), podref, ifname.
#include <compare>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/core/range.hpp"
#include "rdmanet/base/ip.hpp"

namespace rdmanet::ipam {

struct PoolKey {
    std::string network_name;  // ipam.network_name, "" when unset
    base::IpNetwork range;     // normalised CIDR

    std::string name() const;  // whereabouts' IPPool object name
    friend auto operator<=>(const PoolKey&, const PoolKey&) = default;
    friend bool operator==(const PoolKey&, const PoolKey&) = default;
};

// Who holds an address: whereabouts' allocation entry {id, podref, ifname}.
struct Owner {
    std::string container_id;  // "id"
    std::string podref;        // "namespace/name", or the container id when the pod is unknown
    std::string ifname;
    friend bool operator==(const Owner&, const Owner&) = default;
};

// CNI's attachment identity (DEL, GC's cni.dev/valid-attachments).
struct AttachmentId {
    std::string container_id;
    std::string ifname;
    friend auto operator<=>(const AttachmentId&, const AttachmentId&) = default;
    friend bool operator==(const AttachmentId&, const AttachmentId&) = default;
};

struct Allocation {
    PoolKey pool;
    uint128 offset = 0;
    base::IpAddress ip;
    Owner owner;
    std::string network;  // CNI network name that made it (scopes GC)
    bool reused = false;  // allocate(): the podRef+ifname already held it
};

struct AllocateRequest {
    Range range;                    // what may be handed out (pool CIDR = range.cidr)
    std::string network_name;       // ipam.network_name: with range.cidr, the pool key
    bool overlapping_check = true;  // enable_overlapping_ranges: unique across pools of network_name
    Owner owner;
    std::string network;               // CNI network name, recorded for GC
    std::optional<uint128> requested;  // static request inside this range

    PoolKey pool() const { return {network_name, range.cidr}; }
};

// One pool in whereabouts' IPPool spec shape.
struct PoolDump {
    PoolKey pool;
    std::map<uint128, Owner> allocations;

    // {"range":"10.0.0.0/24","allocations":{"5":{"id":..,"podref":..,"ifname":..}}}
    nlohmann::json spec_json() const;
    // Reads that shape back (e.g. a whereabouts IPPool spec for import). Throws IpamError(invalid_config) on a
    // malformed range or offset key, or an offset outside the range.
    static PoolDump from_spec_json(const nlohmann::json& spec, std::string network_name);
};

class Store {
public:
    virtual ~Store() = default;

    // Idempotent per (pool, podref, ifname): a re-ADD returns the same address with its id updated
    // to the new container id. Throws IpamError (range_full, address_in_use, try_again, io_failure).
    virtual Allocation allocate(const AllocateRequest& request) = 0;

    // Releases what `attachment` holds. `pools` are the pools of the current configuration; a store
    // that can look further (the local one releases in every pool) does, so that an edited range
    // does not leak the old pool's address. Nothing held is not an error. Returns what was released.
    virtual std::vector<Allocation> release(std::span<const PoolKey> pools, const AttachmentId& attachment) = 0;

    virtual std::optional<Allocation> find(const PoolKey& pool, std::string_view podref, std::string_view ifname) = 0;

    virtual std::vector<PoolKey> pools() = 0;
    virtual PoolDump dump(const PoolKey& pool) = 0;

    // Releases the allocations made by CNI network `network` whose attachment is not in `valid`
    // (CNI GC). `pools`: those of the current configuration, as for release. Returns what was released.
    virtual std::vector<Allocation> gc(std::string_view network, std::span<const PoolKey> pools,
                                       std::span<const AttachmentId> valid) = 0;
};

}  // namespace rdmanet::ipam
