#include "rdmanet/ipam/core/allocator.hpp"

#include <algorithm>

#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::ipam {

std::optional<Interval> IntervalCoverage::covering(uint128 x) {
    auto it =
        std::upper_bound(sorted_.begin(), sorted_.end(), x, [](uint128 v, const Interval& iv) { return v < iv.lo; });
    if (it == sorted_.begin()) return std::nullopt;
    --it;
    if (it->hi >= x) return *it;
    return std::nullopt;
}

std::optional<uint128> lowest_free(Interval bounds, std::span<Coverage* const> taken) {
    if (bounds.lo > bounds.hi) return std::nullopt;
    uint128 x = bounds.lo;
    // Each step jumps past a whole run, and x only grows: the loop ends after at most one step per
    // run it meets. A pass in which no source covers x proves x free in all of them.
    for (;;) {
        bool moved = false;
        for (Coverage* source : taken) {
            auto run = source->covering(x);
            if (!run) continue;
            if (run->hi >= bounds.hi) return std::nullopt;  // also guards run->hi + 1 overflow
            x = run->hi + 1;
            moved = true;
        }
        if (!moved) return x;
    }
}

Decision decide(const Range& range, std::optional<uint128> existing, std::optional<uint128> requested,
                std::span<Coverage* const> taken) {
    if (requested) {
        if (!range.allocatable(*requested)) {
            config_error("static IP " + range.address_at(*requested).str() + " cannot be handed out in range " +
                         range.describe());
        }
        if (existing == requested) return {*requested, true, false};
        for (Coverage* source : taken) {
            if (source->covering(*requested)) {
                throw IpamError(codes::address_in_use, "static IP " + range.address_at(*requested).str() +
                                                           " is already allocated in range " + range.cidr.str());
            }
        }
        return {*requested, false, existing.has_value()};
    }
    if (existing && range.allocatable(*existing)) return {*existing, true, false};

    IntervalCoverage exclusions(range.excluded);
    std::vector<Coverage*> all(taken.begin(), taken.end());
    all.push_back(&exclusions);
    auto offset = lowest_free({range.first, range.last}, all);
    if (!offset) throw IpamError(codes::range_full, "range full: no free address in " + range.describe());
    return {*offset, false, existing.has_value()};
}

}  // namespace rdmanet::ipam
