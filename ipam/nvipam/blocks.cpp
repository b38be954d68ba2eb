// Block and subnet order of nv-ipam's controller, and the node's allocatable range: see blocks.hpp.
#include "rdmanet/ipam/nvipam/blocks.hpp"

#include <algorithm>

namespace rdmanet::ipam::nvipam {

namespace {

using base::IpAddress;
using base::IpNetwork;

uint128 size_of(const IpNetwork& n) {
    const int host_bits = n.address.bits() - n.prefix;
    return host_bits >= 128 ? kU128Max : (uint128{1} << host_bits);
}

IpAddress plus(const IpAddress& a, uint128 n) { return IpAddress::from_u128(a.family(), a.to_u128() + n); }

std::optional<IpAddress> computed_gateway(const Pool& pool, const IpNetwork& subnet) {
    if (!pool.gateway_index) return std::nullopt;
    return gateway_at(subnet, *pool.gateway_index);
}

const StaticAllocation* static_of(const Pool& pool, std::string_view node) {
    if (node.empty()) return nullptr;
    for (const auto& s : pool.statics)
        if (s.node == node) return &s;
    return nullptr;
}

bool static_prefix(const Pool& pool, const IpNetwork& prefix) {
    for (const auto& s : pool.statics)
        if (s.prefix == prefix) return true;
    return false;
}

std::optional<IpAddress> gateway_for(const Pool& pool, const StaticAllocation& s) {
    return s.gateway ? s.gateway : computed_gateway(pool, s.prefix);
}

// Adds [lo, hi] (addresses) clipped to `r`'s CIDR as offsets.
void exclude(Range& r, const IpAddress& lo, const IpAddress& hi) {
    const IpAddress net = r.cidr.first(), top = r.cidr.last();
    if (lo.family() != net.family() || hi < net || top < lo) return;
    const IpAddress a = lo < net ? net : lo;
    const IpAddress b = top < hi ? top : hi;
    r.excluded.push_back({a.to_u128() - net.to_u128(), b.to_u128() - net.to_u128()});
}

void finish(Range& r) {
    std::vector<Interval> clipped;
    for (auto iv : merge_intervals(std::move(r.excluded))) {
        if (iv.hi < r.first || iv.lo > r.last) continue;
        clipped.push_back({std::max(iv.lo, r.first), std::min(iv.hi, r.last)});
    }
    r.excluded = std::move(clipped);
}

}  // namespace

std::optional<IpAddress> gateway_at(const IpNetwork& subnet, std::uint64_t index) {
    const int host_bits = subnet.address.bits() - subnet.prefix;
    uint128 max_index;
    if (host_bits <= 1) {
        max_index = size_of(subnet) - 1;  // point-to-point or single address: index 0 allowed
    } else {
        if (index == 0) return std::nullopt;  // the network address is no gateway
        const uint128 size = size_of(subnet);
        max_index = subnet.address.is_v4() ? size - 2 : size - 1;
    }
    if (uint128{index} > max_index) return std::nullopt;
    return plus(subnet.masked().address, index);
}

bool valid_allocation(const Pool& pool, const NodeAllocation& a) {
    if (a.node.empty()) return false;
    const IpAddress net = pool.subnet.first();
    if (pool.type == PoolType::ippool) {
        if (!pool.subnet.contains(a.start) || !pool.subnet.contains(a.end) || a.end < a.start) return false;
        const uint128 distance = a.start.to_u128() - net.to_u128();
        if (distance < 1 || (distance - 1) % pool.block_size != 0) return false;
        return a.end.to_u128() - a.start.to_u128() == pool.block_size - 1;
    }
    if (const StaticAllocation* s = static_of(pool, a.node))
        return a.prefix == s->prefix && a.gateway == gateway_for(pool, *s);
    if (static_prefix(pool, a.prefix)) return false;
    if (!pool.subnet.contains(a.prefix.address) || a.prefix.prefix != pool.node_prefix) return false;
    return a.gateway == computed_gateway(pool, a.prefix);
}

const NodeAllocation* overlapping_allocation(const Pool& pool, const NodeAllocation& mine) {
    for (const auto& a : pool.allocations) {
        if (a.node == mine.node || a.start.family() != mine.start.family()) continue;
        if (!(a.end < mine.start || mine.end < a.start)) return &a;
    }
    return nullptr;
}

std::optional<NodeAllocation> next_allocation(const Pool& pool, const std::string& node) {
    if (const NodeAllocation* mine = pool.allocation_of(node); mine && valid_allocation(pool, *mine)) return *mine;
    const IpAddress net = pool.subnet.first();
    const uint128 base = net.to_u128();
    const uint128 pool_last = pool.subnet.last().to_u128();
    // What the other nodes hold (and, in a CIDRPool, the static prefixes), as sorted disjoint
    // offsets from the network address: one sort, then one pass over the candidates that jumps
    // past each held run, so a claim costs O(n log n) in the nodes of the pool, not one scan of
    // every allocation per candidate.
    std::vector<Interval> held;
    held.reserve(pool.allocations.size() + pool.statics.size());
    auto hold = [&](const IpAddress& lo, const IpAddress& hi) {
        if (lo.family() != net.family() || hi < lo || hi.to_u128() < base || lo.to_u128() > pool_last) return;
        held.push_back({lo.to_u128() < base ? 0 : lo.to_u128() - base, std::min(hi.to_u128(), pool_last) - base});
    };
    for (const auto& a : pool.allocations)
        if (a.node != node) hold(a.start, a.end);
    if (pool.type == PoolType::cidrpool) {
        if (const StaticAllocation* s = static_of(pool, node))
            return NodeAllocation{node, s->prefix.first(), s->prefix.last(), s->prefix, gateway_for(pool, *s)};
        for (const auto& s : pool.statics) hold(s.prefix.first(), s.prefix.last());
    }
    held = merge_intervals(std::move(held));
    // Candidate k covers offsets [first + k * step, first + k * step + size - 1].
    const bool ippool = pool.type == PoolType::ippool;
    const uint128 first = ippool ? 1 : 0;
    const uint128 step = ippool ? uint128{pool.block_size} : size_of(IpNetwork{net, pool.node_prefix});
    const uint128 span = pool_last - base;  // the last offset
    auto run = held.begin();
    for (uint128 k = 0;;) {
        if (step != 0 && k > (span - std::min(span, first)) / step) return std::nullopt;
        const uint128 lo = first + k * step;
        const uint128 hi = lo + (step - 1);
        if (hi > span || hi < lo || (ippool && net.is_v4() && hi == span)) return std::nullopt;
        while (run != held.end() && run->hi < lo) ++run;
        if (run != held.end() && run->lo <= hi) {
            // Held: the next candidate is the first that starts after this run.
            if (run->hi == span) return std::nullopt;
            k = (run->hi - first) / step + 1;
            continue;
        }
        const IpAddress s = IpAddress::from_u128(net.family(), base + lo),
                        e = IpAddress::from_u128(net.family(), base + hi);
        if (ippool) return NodeAllocation{node, s, e, IpNetwork{s, s.bits()}, std::nullopt};
        const IpNetwork prefix{s, pool.node_prefix};
        return NodeAllocation{node, s, e, prefix, computed_gateway(pool, prefix)};
    }
}

Range node_range(const Pool& pool, const NodeAllocation& a) {
    Range r;
    r.field = pool.where();
    if (pool.type == PoolType::ippool) {
        r.cidr = pool.subnet;
        const Interval usable = usable_offsets(pool.subnet);
        const uint128 net = pool.subnet.first().to_u128();
        r.first = std::max(a.start.to_u128() - net, usable.lo);
        r.last = std::min(a.end.to_u128() - net, usable.hi);
        r.gateway = pool.gateway;
        for (const auto& x : pool.node_exclusions)
            exclude(r, plus(a.start, x.start),
                    plus(a.start, std::min<uint128>(x.end, a.end.to_u128() - a.start.to_u128())));
    } else {
        r.cidr = a.prefix;
        const int host_bits = a.prefix.address.bits() - a.prefix.prefix;
        const uint128 size = size_of(a.prefix);
        if (host_bits <= 1) {
            r.first = 0;
            r.last = size - 1;
        } else {
            r.first = 1;
            r.last = a.prefix.address.is_v4() ? size - 2 : size - 1;  // IPv6 has no broadcast address
        }
        r.gateway = a.gateway;
        for (const auto& x : pool.node_exclusions) {
            if (uint128{x.start} > size - 1) continue;
            exclude(r, plus(a.prefix.first(), x.start), plus(a.prefix.first(), std::min<uint128>(x.end, size - 1)));
        }
    }
    if (r.gateway) exclude(r, *r.gateway, *r.gateway);
    for (const auto& x : pool.exclusions) exclude(r, x.start, x.end);
    finish(r);
    return r;
}

std::vector<base::Route> node_routes(const Pool& pool, const NodeAllocation& a) {
    const std::optional<IpAddress> gw = pool.type == PoolType::ippool ? pool.gateway : a.gateway;
    std::vector<base::Route> out;
    for (const auto& dst : pool.routes) out.push_back(base::Route{dst, gw, {}, {}, {}, {}, {}});
    if (pool.default_gateway && gw) {
        const IpNetwork any{IpAddress::from_u128(pool.subnet.address.family(), 0), 0};
        out.push_back(base::Route{any, gw, {}, {}, {}, {}, {}});
    }
    return out;
}

}  // namespace rdmanet::ipam::nvipam
