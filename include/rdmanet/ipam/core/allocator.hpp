#pragma once
// The allocation decision: a pure function over (range, exclusions, current allocations) giving the
// lowest free offset, in whereabouts' order, or reusing the attachment's existing one.
//
// Why "coverage": the current allocations are never loaded whole. Each source of taken offsets
// (the range's exclusions, the pool's allocations, the overlapping-range reservations) answers
// only "which run of taken offsets covers x?" with one ordered lookup (runs.hpp). The search jumps
// from the candidate to the end of whichever run covers it, so its cost is O(k log n) where k is
// the number of runs it jumps over - at most one per exclusion plus one per source when the sources
// agree - and does not depend on the size of the range nor on how many addresses are allocated.
#include <optional>
#include <span>
#include <vector>

#include "rdmanet/ipam/core/range.hpp"
#include "rdmanet/ipam/core/runs.hpp"

namespace rdmanet::ipam {

class Coverage {
public:
    virtual ~Coverage() = default;
    // The maximal run of taken offsets that contains x; nullopt when x is free. Non-const: a
    // datastore-backed coverage runs a query.
    virtual std::optional<Interval> covering(uint128 x) = 0;
};

// Over a sorted, merged vector (a range's exclusions).
class IntervalCoverage final : public Coverage {
public:
    explicit IntervalCoverage(const std::vector<Interval>& sorted) : sorted_(sorted) {}
    std::optional<Interval> covering(uint128 x) override;

private:
    const std::vector<Interval>& sorted_;
};

// Over an in-memory run set.
class RunsCoverage final : public Coverage {
public:
    explicit RunsCoverage(const MemoryRuns& runs) : runs_(runs) {}
    std::optional<Interval> covering(uint128 x) override { return runs_.covering(x); }

private:
    const MemoryRuns& runs_;
};

// Lowest x in `bounds` covered by none of `taken`; nullopt when every offset is taken.
std::optional<uint128> lowest_free(Interval bounds, std::span<Coverage* const> taken);

struct Decision {
    uint128 offset = 0;
    bool reuse = false;          // offset is the attachment's existing allocation: keep it
    bool drop_existing = false;  // the existing allocation must be released (moved or no longer valid)
};

// `existing`: the offset this podRef+ifname already holds in the pool (whereabouts' stickiness:
// a re-ADD gets the same address). `requested`: a static request for this range. `taken`: the
// pool's allocations and any other source of taken offsets; the range's exclusions are added here.
// An existing allocation that the current configuration no longer allows (excluded since, or
// outside a narrowed range_start/range_end) is dropped and a new one chosen.
// Throws IpamError: range_full naming the range; invalid_config when `requested` is not
// allocatable in the range; address_in_use when `requested` is taken by someone else.
Decision decide(const Range& range, std::optional<uint128> existing, std::optional<uint128> requested,
                std::span<Coverage* const> taken);

}  // namespace rdmanet::ipam
