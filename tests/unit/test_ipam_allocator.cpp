// Run sets and the pure allocation decision, checked against brute force and at the boundaries.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "ipam_test_util.hpp"
#include "rdmanet/ipam/core/allocator.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/core/naming.hpp"
#include "rdmanet/ipam/core/runs.hpp"

using namespace rdmanet::ipam;
using rdmanet::base::IpAddress;
using rdmanet::base::IpNetwork;

namespace {

const uint128 k2_63 = uint128{1} << 63;
const uint128 k2_64 = uint128{1} << 64;

// Checks the run-set invariants: disjoint, sorted, never adjacent (maximal runs).
void require_maximal(const MemoryRuns& runs) {
    std::optional<uint128> prev_hi;
    for (const auto& [lo, hi] : runs.all()) {
        REQUIRE(lo <= hi);
        if (prev_hi) REQUIRE(lo > *prev_hi + 1);
        prev_hi = hi;
    }
}

// Counts lookups, to show the search does not walk allocations one by one.
class CountingCoverage final : public Coverage {
public:
    explicit CountingCoverage(const MemoryRuns& runs) : runs_(runs) {}
    std::optional<Interval> covering(uint128 x) override {
        ++calls;
        return runs_.covering(x);
    }
    int calls = 0;

private:
    const MemoryRuns& runs_;
};

Range range_of(const nlohmann::json& ipam) { return ipam_test::config(ipam).ranges.at(0); }

Decision decide_with(const Range& r, const MemoryRuns& allocated, std::optional<uint128> existing = std::nullopt,
                     std::optional<uint128> requested = std::nullopt) {
    RunsCoverage cov(allocated);
    Coverage* taken[] = {&cov};
    return decide(r, existing, requested, taken);
}

IpamError decide_error(const Range& r, const MemoryRuns& allocated, std::optional<uint128> requested = std::nullopt) {
    try {
        decide_with(r, allocated, std::nullopt, requested);
    } catch (const IpamError& e) {
        return e;
    }
    FAIL("expected an IpamError");
    return IpamError(0, "");
}

// Fills the range with decide() until it is full; returns the offsets in hand-out order.
std::vector<uint128> fill(const Range& r, MemoryRuns& allocated, std::size_t limit = 100000) {
    std::vector<uint128> order;
    for (std::size_t i = 0; i < limit; ++i) {
        try {
            const Decision d = decide_with(r, allocated);
            REQUIRE(allocated.insert(d.offset));
            order.push_back(d.offset);
        } catch (const IpamError& e) {
            REQUIRE(e.code == codes::range_full);
            break;
        }
    }
    return order;
}

}  // namespace

TEST_CASE("ipam u128: decimal keys and byte order", "[ipam]") {
    CHECK(to_decimal(0) == "0");
    CHECK(to_decimal(k2_63) == "9223372036854775808");
    CHECK(to_decimal(kU128Max) == "340282366920938463463374607431768211455");
    CHECK(parse_decimal("340282366920938463463374607431768211455") == kU128Max);
    CHECK_FALSE(parse_decimal("340282366920938463463374607431768211456"));
    CHECK(parse_decimal("9223372036854775808") == k2_63);
    CHECK(parse_decimal("0") == uint128{0});
    for (const char* bad : {"", "-1", "+1", "01", "1a", " 1", "1.0", "0x10"}) {
        INFO(bad);
        CHECK_FALSE(parse_decimal(bad));
    }
    for (uint128 v : {uint128{0}, uint128{1}, uint128{255}, k2_63, k2_64 + 7, kU128Max}) {
        CHECK(from_be128(to_be128(v).data()) == v);
    }
    // memcmp order equals numeric order (what SQLite's BLOB index relies on).
    CHECK(to_be128(255) < to_be128(256));
    CHECK(to_be128(k2_63 - 1) < to_be128(k2_63));
}

TEST_CASE("ipam naming: whereabouts object names", "[ipam]") {
    CHECK(pool_object_name("", *IpNetwork::parse("10.0.0.0/8")) == "10.0.0.0-8");
    CHECK(pool_object_name("blue", *IpNetwork::parse("10.0.0.0/8")) == "blue-10.0.0.0-8");
    CHECK(pool_object_name("", *IpNetwork::parse("192.168.2.225/28")) == "192.168.2.224-28");
    CHECK(pool_object_name("", *IpNetwork::parse("fd00::/64")) == "fd00---64");
    CHECK(reservation_object_name("", *IpAddress::parse("10.0.0.5")) == "10.0.0.5");
    CHECK(reservation_object_name("", *IpAddress::parse("fd00::5")) == "fd00--5");
    CHECK(reservation_object_name("", *IpAddress::parse("fd00::")) == "fd00--0");
    CHECK(reservation_object_name("blue", *IpAddress::parse("10.0.0.5")) == "blue-10.0.0.5");
}

TEST_CASE("ipam runs: random inserts and erases match a plain set", "[ipam]") {
    std::mt19937_64 rng(42);
    for (uint128 base : {uint128{0}, k2_63 - 32, kU128Max - 63}) {
        MemoryRuns runs;
        std::set<uint128> model;
        std::uniform_int_distribution<int> pick(0, 63);
        for (int step = 0; step < 4000; ++step) {
            const uint128 x = base + static_cast<unsigned>(pick(rng));
            if (rng() % 2) {
                CHECK(runs.insert(x) == model.insert(x).second);
            } else {
                CHECK(runs.erase(x) == (model.erase(x) == 1));
            }
            if (step % 50 == 0) {
                require_maximal(runs);
                for (int i = 0; i < 64; ++i) REQUIRE(runs.contains(base + i) == model.contains(base + i));
            }
        }
    }
}

TEST_CASE("ipam runs: the ends of the 128-bit space", "[ipam]") {
    MemoryRuns runs;
    CHECK(runs.insert(0));
    CHECK(runs.insert(kU128Max));
    CHECK(runs.insert(1));
    CHECK(runs.insert(kU128Max - 1));
    CHECK_FALSE(runs.insert(kU128Max));
    CHECK(runs.run_count() == 2);
    CHECK(runs.covering(1) == Interval{0, 1});
    CHECK(runs.covering(kU128Max) == Interval{kU128Max - 1, kU128Max});
    CHECK(runs.erase(kU128Max));
    CHECK(runs.erase(0));
    CHECK(runs.covering(kU128Max - 1) == Interval{kU128Max - 1, kU128Max - 1});
    CHECK_FALSE(runs.erase(0));
}

TEST_CASE("ipam allocator: lowest free offset equals brute force", "[ipam]") {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 300; ++round) {
        // A /27 with random start/end, exclusions and allocations.
        const int start = static_cast<int>(rng() % 20);
        const int end = start + static_cast<int>(rng() % (31 - start));
        nlohmann::json excl = nlohmann::json::array();
        for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i) {
            excl.push_back("10.0.0." + std::to_string(rng() % 32) + "/" + std::to_string(29 + rng() % 4));
        }
        nlohmann::json ipam = {{"range", "10.0.0.0/27"},
                               {"range_start", "10.0.0." + std::to_string(start)},
                               {"range_end", "10.0.0." + std::to_string(end)},
                               {"exclude", excl}};
        if (rng() % 2) ipam["gateway"] = "10.0.0." + std::to_string(rng() % 32);
        Range r;
        try {
            r = range_of(ipam);
        } catch (const IpamError&) {
            continue;  // e.g. range_start/range_end only on network/broadcast
        }
        MemoryRuns allocated;
        for (int i = 0, n = static_cast<int>(rng() % 30); i < n; ++i) allocated.insert(rng() % 32);

        std::optional<uint128> expected;
        for (uint128 x = 0; x < 32; ++x) {
            if (r.allocatable(x) && !allocated.contains(x)) {
                expected = x;
                break;
            }
        }
        INFO(ipam.dump());
        if (expected) {
            const Decision d = decide_with(r, allocated);
            CHECK(d.offset == *expected);
            CHECK_FALSE(d.reuse);
            // Never network, broadcast or gateway.
            CHECK(d.offset != 0);
            CHECK(d.offset != 31);
            if (r.gateway) CHECK(r.address_at(d.offset) != *r.gateway);
        } else {
            CHECK(decide_error(r, allocated).code == codes::range_full);
        }
    }
}

TEST_CASE("ipam allocator: boundaries", "[ipam]") {
    MemoryRuns none;
    SECTION("/32 and /128: the one address, then full") {
        for (const char* cidr : {"10.0.0.7/32", "fd00::7/128"}) {
            MemoryRuns a;
            auto order = fill(range_of({{"range", cidr}}), a);
            CHECK(order == std::vector<uint128>{0});
        }
    }
    SECTION("/31 and /127: both addresses") {
        for (const char* cidr : {"10.0.0.6/31", "fd00::6/127"}) {
            MemoryRuns a;
            CHECK(fill(range_of({{"range", cidr}}), a) == std::vector<uint128>{0, 1});
        }
    }
    SECTION("/30: never network or broadcast") {
        MemoryRuns a;
        CHECK(fill(range_of({{"range", "10.0.0.4/30"}}), a) == std::vector<uint128>{1, 2});
    }
    SECTION("/24 in order, skipping exclusions and the gateway, 252 addresses") {
        MemoryRuns a;
        auto order = fill(range_of({{"range", "10.0.0.0/24"}, {"gateway", "10.0.0.1"}, {"exclude", {"10.0.0.10"}}}), a);
        REQUIRE(order.size() == 252);
        CHECK(order.front() == 2);
        CHECK(order[7] == 9);
        CHECK(order[8] == 11);
        CHECK(order.back() == 254);
    }
    SECTION("start = end") {
        MemoryRuns a;
        CHECK(fill(range_of({{"range", "10.0.0.0/24"}, {"range_start", "10.0.0.9"}, {"range_end", "10.0.0.9"}}), a) ==
              std::vector<uint128>{9});
    }
    SECTION("exclusions covering everything: range full naming the range") {
        const Range r = range_of({{"range", "10.0.0.0/29"}, {"exclude", {"10.0.0.0/30", "10.0.0.4/30"}}});
        const IpamError e = decide_error(r, none);
        CHECK(e.code == codes::range_full);
        CHECK_THAT(e.msg, Catch::Contains("range full") && Catch::Contains("10.0.0.0/29") &&
                              Catch::Contains("ipam.range") && Catch::Contains("excluding 10.0.0.1-10.0.0.6"));
    }
    SECTION("/32 whose only address is the gateway") {
        CHECK(decide_error(range_of({{"range", "10.0.0.7/32"}, {"gateway", "10.0.0.7"}}), none).code ==
              codes::range_full);
    }
    SECTION("IPv6 offsets at and above 2^63") {
        const Range r = range_of({{"range", "fd00::/64"}, {"range_start", "fd00::7fff:ffff:ffff:fffe"}});
        CHECK(r.first == k2_63 - 2);
        MemoryRuns a;
        auto order = fill(r, a, 5);
        CHECK(order == std::vector<uint128>{k2_63 - 2, k2_63 - 1, k2_63, k2_63 + 1, k2_63 + 2});
        CHECK(r.address_at(k2_63).str() == "fd00::8000:0:0:0");
        CHECK(to_decimal(order[2]) == "9223372036854775808");
    }
    SECTION("top of an IPv6 /64 and of the whole IPv6 space") {
        const Range r64 = range_of({{"range", "fd00::/64"}, {"range_start", "fd00::ffff:ffff:ffff:fffd"}});
        MemoryRuns a;
        CHECK(fill(r64, a) == std::vector<uint128>{k2_64 - 3, k2_64 - 2});  // all-ones never
        const Range all = range_of({{"range", "::/0"}, {"range_start", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc"}});
        MemoryRuns b;
        CHECK(fill(all, b) == std::vector<uint128>{kU128Max - 3, kU128Max - 2, kU128Max - 1});
    }
}

TEST_CASE("ipam allocator: cost does not depend on how many addresses are allocated", "[ipam]") {
    const Range r = range_of({{"range", "fd00::/64"}, {"exclude", {"fd00::100:0/112", "fd00::200:0/112"}}});
    MemoryRuns allocated;
    // Everything up to 2^40 allocated (as one run, as lowest-first allocation produces), apart from
    // the exclusions' gaps.
    allocated.put({1, (uint128{1} << 40)});
    CountingCoverage counting(allocated);
    Coverage* taken[] = {&counting};
    const Decision d = decide(r, std::nullopt, std::nullopt, taken);
    CHECK(d.offset == (uint128{1} << 40) + 1);
    CHECK(counting.calls <= 3);
}

TEST_CASE("ipam allocator: idempotency and static requests", "[ipam]") {
    const Range r = range_of({{"range", "10.0.0.0/24"}, {"gateway", "10.0.0.1"}, {"exclude", {"10.0.0.50"}}});
    MemoryRuns a;
    for (uint128 x : {2, 3, 4, 7}) a.insert(x);

    SECTION("an existing allocation is reused") {
        const Decision d = decide_with(r, a, uint128{7});
        CHECK(d.offset == 7);
        CHECK(d.reuse);
        CHECK_FALSE(d.drop_existing);
    }
    SECTION("an existing allocation the config no longer allows is replaced") {
        MemoryRuns b = a;
        b.insert(50);
        const Decision d = decide_with(r, b, uint128{50});
        CHECK(d.offset == 5);
        CHECK_FALSE(d.reuse);
        CHECK(d.drop_existing);
    }
    SECTION("static request: free, own, taken, not allocatable") {
        CHECK(decide_with(r, a, std::nullopt, uint128{100}).offset == 100);
        const Decision own = decide_with(r, a, uint128{7}, uint128{7});
        CHECK(own.reuse);
        const Decision moved = decide_with(r, a, uint128{7}, uint128{9});
        CHECK((moved.offset == 9 && !moved.reuse && moved.drop_existing));
        CHECK(decide_error(r, a, uint128{3}).code == codes::address_in_use);
        CHECK(decide_error(r, a, uint128{1}).code == codes::invalid_config);    // gateway
        CHECK(decide_error(r, a, uint128{50}).code == codes::invalid_config);   // excluded
        CHECK(decide_error(r, a, uint128{255}).code == codes::invalid_config);  // broadcast
    }
    SECTION("several sources of taken offsets") {
        MemoryRuns reserved;
        reserved.insert(5);
        reserved.insert(6);
        RunsCoverage own(a), other(reserved);
        Coverage* taken[] = {&own, &other};
        CHECK(decide(r, std::nullopt, std::nullopt, taken).offset == 8);
    }
}
