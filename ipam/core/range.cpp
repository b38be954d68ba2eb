#include "rdmanet/ipam/core/range.hpp"

#include <algorithm>

namespace rdmanet::ipam {

std::vector<Interval> merge_intervals(std::vector<Interval> intervals) {
    std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) { return a.lo < b.lo; });
    std::vector<Interval> out;
    for (const auto& iv : intervals) {
        // Adjacent runs merge too ([1,2] + [3,4] = [1,4]); hi + 1 cannot overflow unless hi is max,
        // in which case the previous interval already covers everything after it.
        if (!out.empty() && (out.back().hi == kU128Max || iv.lo <= out.back().hi + 1)) {
            out.back().hi = std::max(out.back().hi, iv.hi);
        } else {
            out.push_back(iv);
        }
    }
    return out;
}

Interval usable_offsets(const base::IpNetwork& cidr) {
    const int host_bits = cidr.address.bits() - cidr.prefix;
    if (host_bits <= 0) return {0, 0};
    if (host_bits == 1) return {0, 1};
    const uint128 size_minus_one = host_bits >= 128 ? kU128Max : (uint128{1} << host_bits) - 1;
    return {1, size_minus_one - 1};
}

base::IpAddress Range::address_at(uint128 offset) const {
    return base::IpAddress::from_u128(cidr.address.family(), cidr.address.to_u128() + offset);
}

std::optional<uint128> Range::offset_of(const base::IpAddress& ip) const {
    if (!cidr.contains(ip)) return std::nullopt;
    return ip.to_u128() - cidr.address.to_u128();
}

bool Range::allocatable(uint128 offset) const {
    if (offset < first || offset > last) return false;
    auto it = std::upper_bound(excluded.begin(), excluded.end(), offset,
                               [](uint128 x, const Interval& iv) { return x < iv.lo; });
    if (it == excluded.begin()) return true;
    return !std::prev(it)->contains(offset);
}

std::string Range::describe() const {
    std::string out = cidr.str() + " (" + field + ", " + address_at(first).str() + "-" + address_at(last).str();
    if (!excluded.empty()) {
        out += " excluding ";
        for (std::size_t i = 0; i < excluded.size(); ++i) {
            if (i != 0) out += ", ";
            out += address_at(excluded[i].lo).str();
            if (excluded[i].hi != excluded[i].lo) out.append("-").append(address_at(excluded[i].hi).str());
        }
    }
    return out + ")";
}

}  // namespace rdmanet::ipam
