#pragma once
// A set of offsets kept as maximal runs of consecutive values ([lo, hi] intervals, disjoint and
// never adjacent). It answers "which run covers x" with one ordered lookup, so finding the lowest
// value not in the set is O(log n) in the number of runs however long a run is - the walk over a
// contiguous block of allocations that makes whereabouts O(A) never happens.
//
// The algorithms are written once over a small backend concept so that the in-memory set (tests,
// the Kubernetes store which reads whole pool objects) and the SQLite table of runs (the local
// store, where only the touched rows are read) share one implementation:
//   std::optional<Interval> floor(uint128 x)   run with the greatest lo <= x
//   std::optional<Interval> at(uint128 lo)     run starting exactly at lo
//   void put(Interval run)                     insert or replace the run starting at run.lo
//   void remove(uint128 lo)                    delete the run starting at lo
#include <map>
#include <optional>
#include <stdexcept>

#include "rdmanet/ipam/core/range.hpp"

namespace rdmanet::ipam::runs {

template <class Backend>
std::optional<Interval> covering(Backend& b, uint128 x) {
    auto run = b.floor(x);
    if (run && run->hi >= x) return run;
    return std::nullopt;
}

// Adds x; returns false (and changes nothing) when x is already in the set.
template <class Backend>
bool insert(Backend& b, uint128 x) {
    auto left = b.floor(x);
    if (left && left->hi >= x) return false;
    const bool join_left = left && x != 0 && left->hi == x - 1;
    std::optional<Interval> right;
    if (x != kU128Max) right = b.at(x + 1);
    if (join_left && right) {
        b.remove(right->lo);
        b.put({left->lo, right->hi});
    } else if (join_left) {
        b.put({left->lo, x});
    } else if (right) {
        b.remove(right->lo);
        b.put({x, right->hi});
    } else {
        b.put({x, x});
    }
    return true;
}

// Removes x; returns false when x was not in the set.
template <class Backend>
bool erase(Backend& b, uint128 x) {
    auto run = covering(b, x);
    if (!run) return false;
    if (run->lo == x) {
        b.remove(x);
        if (run->hi != x) b.put({x + 1, run->hi});
    } else {
        b.put({run->lo, x - 1});
        if (run->hi != x) b.put({x + 1, run->hi});
    }
    return true;
}

}  // namespace rdmanet::ipam::runs

namespace rdmanet::ipam {

// The in-memory run set (std::map keyed by lo).
class MemoryRuns {
public:
    bool insert(uint128 x) { return runs::insert(*this, x); }
    bool erase(uint128 x) { return runs::erase(*this, x); }
    bool contains(uint128 x) const { return covering(x).has_value(); }
    std::optional<Interval> covering(uint128 x) const {
        auto run = floor(x);
        if (run && run->hi >= x) return run;
        return std::nullopt;
    }
    std::size_t run_count() const { return runs_.size(); }
    const std::map<uint128, uint128>& all() const { return runs_; }

    // Backend concept.
    std::optional<Interval> floor(uint128 x) const {
        auto it = runs_.upper_bound(x);
        if (it == runs_.begin()) return std::nullopt;
        --it;
        return Interval{it->first, it->second};
    }
    std::optional<Interval> at(uint128 lo) const {
        auto it = runs_.find(lo);
        if (it == runs_.end()) return std::nullopt;
        return Interval{it->first, it->second};
    }
    void put(Interval run) { runs_[run.lo] = run.hi; }
    void remove(uint128 lo) { runs_.erase(lo); }

private:
    std::map<uint128, uint128> runs_;
};

}  // namespace rdmanet::ipam
