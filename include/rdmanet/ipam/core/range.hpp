#pragma once
// One allocation range, validated and reduced to offsets from its network address. Pure values.
//
// Deliberate differences from whereabouts (also listed in docs/ipam.md):
//  - the network address, the broadcast (all-ones) address and the gateway are never handed out
//    (whereabouts hands out the gateway);
//  - /31 and /127 (RFC 3021/6164 point-to-point) give both addresses, /32 and /128 their single
//    address (whereabouts rejects these prefixes);
//  - offsets are full 128-bit values, so an IPv6 range of any size works.
#include <optional>
#include <string>
#include <vector>

#include "rdmanet/ipam/core/u128.hpp"
#include "rdmanet/base/ip.hpp"

namespace rdmanet::ipam {

// A closed interval of offsets [lo, hi].
struct Interval {
    uint128 lo = 0;
    uint128 hi = 0;
    bool contains(uint128 x) const { return lo <= x && x <= hi; }
    friend bool operator==(const Interval&, const Interval&) = default;
};

// Sorts and merges overlapping or adjacent intervals.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);

struct Range {
    base::IpNetwork cidr;            // normalised: host bits cleared
    uint128 first = 0;               // lowest offset that may be handed out
    uint128 last = 0;                // highest offset that may be handed out
    std::vector<Interval> excluded;  // merged, sorted, clipped to [first, last]; holds the gateway
    std::optional<base::IpAddress> gateway;
    std::string field;  // where it came from, for messages: "ipam", "ipam.ipRanges[1]"

    base::IpAddress address_at(uint128 offset) const;
    // Offset of `ip` from the network address; nullopt when `ip` is not inside the CIDR.
    std::optional<uint128> offset_of(const base::IpAddress& ip) const;
    // Inside [first, last] and not excluded: may be handed out.
    bool allocatable(uint128 offset) const;
    // "10.0.0.0/24" or "10.0.0.10-10.0.0.20/24 excluding ..." for messages.
    std::string describe() const;
};

// The offsets a prefix can hand out at all: 1 .. size-2, except /31 & /127 (0..1), /32 & /128 (0).
Interval usable_offsets(const base::IpNetwork& cidr);

}  // namespace rdmanet::ipam
