#pragma once
// One nv-ipam pool object as the API server (or anything impersonating it) answers it, through
// what a node does with it: parse_pool for both kinds, then for an accepted pool the claim (next
// block or subnet), its range and routes, and the status it would write back. Shared by the
// libFuzzer target fuzz_nvipam_pool and the unit test that replays its seed corpus at full size.
// Allowed outcomes: a pool, or IpamError (fuzz_support.hpp); invariants of an accepted pool are
// checked with __builtin_trap so that libFuzzer reports them.
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"

#include "rdmanet/ipam/nvipam/blocks.hpp"
#include "rdmanet/ipam/nvipam/pool.hpp"

namespace rdmanet::fuzz {

inline void check_nvipam_pool(std::string_view text) {
    using namespace rdmanet::ipam::nvipam;
    const nlohmann::json object = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (object.is_discarded()) return;
    for (PoolType type : {PoolType::ippool, PoolType::cidrpool}) {
        expect_clean_rejection([&] {
            const Pool pool = parse_pool(object, type);
            const auto next = next_allocation(pool, "fuzz-node");
            if (!next) return;
            // What the node claims is a block the controller keeps, inside the pool, and never one
            // another node holds (unless it is the node's own entry, which the claim checks).
            if (!valid_allocation(pool, *next) && !pool.allocation_of("fuzz-node")) __builtin_trap();
            if (!pool.subnet.contains(next->start) || !pool.subnet.contains(next->end)) __builtin_trap();
            if (!pool.allocation_of("fuzz-node") && overlapping_allocation(pool, *next)) __builtin_trap();
            (void)node_range(pool, *next);
            (void)node_routes(pool, *next);
            std::vector<NodeAllocation> entries = pool.allocations;
            entries.push_back(*next);
            (void)allocations_json(pool, entries).dump();
        });
    }
}

}  // namespace rdmanet::fuzz
