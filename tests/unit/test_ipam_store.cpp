// The SQLite local store and the ADD/DEL/CHECK/GC API over it, in a temporary directory.
#include <catch2/catch.hpp>

#include <sqlite3.h>
#include <sys/stat.h>

#include <functional>
#include <map>
#include <set>
#include <random>

#include "ipam_test_util.hpp"
#include "support/catch_ip.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/ipam.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"

using namespace rdmanet::ipam;
using ipam_test::TempDir;
using nlohmann::json;
using rdmanet::test::ip_addr;
using rdmanet::test::ip_net;

namespace {

const uint128 k2_63 = uint128{1} << 63;

IpamRequest ipam_request(const IpamConfig& c, const std::string& container_id, const std::string& ifname = "net1",
                         const std::string& podref = "") {
    return IpamRequest{c, "testnet", container_id, ifname, podref.empty() ? "ns/" + container_id : podref, {}, {}};
}

int error_code(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const IpamError& e) {
        return e.code;
    }
    return 0;
}

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("ipam store: lowest free, release, reuse of the freed address", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/29"}, {"gateway", "10.0.0.1"}});

    CHECK(store.allocate(ipam_test::request(c, "a")).ip.str() == "10.0.0.2");
    CHECK(store.allocate(ipam_test::request(c, "b")).ip.str() == "10.0.0.3");
    const Allocation third = store.allocate(ipam_test::request(c, "c"));
    CHECK(third.ip.str() == "10.0.0.4");
    CHECK(third.offset == 4);
    CHECK(third.pool.range.str() == "10.0.0.0/29");
    CHECK_FALSE(third.reused);

    auto released = store.release({}, AttachmentId{"b", "net1"});
    REQUIRE(released.size() == 1);
    CHECK(released[0].ip.str() == "10.0.0.3");
    CHECK(store.allocate(ipam_test::request(c, "d")).ip.str() == "10.0.0.3");
    CHECK(store.allocate(ipam_test::request(c, "e")).ip.str() == "10.0.0.5");
    CHECK(store.allocate(ipam_test::request(c, "f")).ip.str() == "10.0.0.6");
    try {
        store.allocate(ipam_test::request(c, "g"));
        FAIL("expected range full");
    } catch (const IpamError& e) {
        CHECK(e.code == codes::range_full);
        CHECK_THAT(e.msg, Catch::Contains("10.0.0.0/29"));
    }
    CHECK(store.release({}, AttachmentId{"nobody", "net1"}).empty());
    CHECK(store.verify().empty());
}

TEST_CASE("ipam store: re-ADD of the same pod keeps its address, DEL keys by container id", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/24"}});

    const Allocation first = store.allocate(ipam_test::request(c, "sandbox-1", "net1", "ml/trainer-0"));
    store.allocate(ipam_test::request(c, "other", "net1", "ml/other"));
    const Allocation again = store.allocate(ipam_test::request(c, "sandbox-2", "net1", "ml/trainer-0"));
    CHECK(again.ip == first.ip);
    CHECK(again.reused);
    CHECK(again.owner.container_id == "sandbox-2");
    // Another interface of the same pod is a different allocation.
    CHECK(store.allocate(ipam_test::request(c, "sandbox-2", "net2", "ml/trainer-0")).ip != first.ip);

    // The old sandbox's DEL finds nothing (the entry now belongs to sandbox-2).
    CHECK(store.release({}, AttachmentId{"sandbox-1", "net1"}).empty());
    auto found = store.find(PoolKey{"", c.ranges[0].cidr}, "ml/trainer-0", "net1");
    REQUIRE(found);
    CHECK(found->owner.container_id == "sandbox-2");
    CHECK(found->network == "testnet");
    CHECK(store.release({}, AttachmentId{"sandbox-2", "net1"}).size() == 1);
    CHECK_FALSE(store.find(PoolKey{"", c.ranges[0].cidr}, "ml/trainer-0", "net1"));
    CHECK(store.verify().empty());
}

TEST_CASE("ipam store: pools, dump in whereabouts' IPPool shape, import", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"range", "10.10.0.0/16"}, {"network_name", "blue"}});
    store.allocate(ipam_test::request(c, "3f9a", "net1", "ml/trainer-0"));

    const auto pools = store.pools();
    REQUIRE(pools.size() == 1);
    CHECK(pools[0].name() == "blue-10.10.0.0-16");
    const json spec = store.dump(pools[0]).spec_json();
    CHECK(spec == json::parse(R"({"range":"10.10.0.0/16",
        "allocations":{"1":{"id":"3f9a","podref":"ml/trainer-0","ifname":"net1"}}})"));

    SECTION("import a whereabouts pool, then allocate around it") {
        const json wb = json::parse(R"({"range":"10.10.0.0/16","allocations":{
            "2":{"id":"x2","podref":"a/b","ifname":"net1"},"3":{"id":"x3","podref":"a/c","ifname":"net1"},
            "5":{"id":"x5","podref":"a/d","ifname":"net1"}}})");
        store.import_pool(PoolDump::from_spec_json(wb, "blue"), "testnet");
        CHECK(store.allocate(ipam_test::request(c, "n1")).offset == 4);
        CHECK(store.allocate(ipam_test::request(c, "n2")).offset == 6);
        CHECK(store.dump(pools[0]).allocations.size() == 6);
        CHECK(store.verify().empty());
        CHECK(error_code([&] { store.import_pool(PoolDump::from_spec_json(wb, "blue"), "testnet"); }) ==
              codes::address_in_use);
    }
    SECTION("malformed IPPool keys are rejected loudly") {
        for (const char* key : {"-1", "01", "x", "65536", "9223372036854775808"}) {
            INFO(key);
            const json bad = {{"range", "10.10.0.0/16"}, {"allocations", {{key, {{"id", "a"}, {"podref", "b"}}}}}};
            CHECK(error_code([&] { PoolDump::from_spec_json(bad, ""); }) == codes::invalid_config);
        }
    }
}

TEST_CASE("ipam store: IPv6 offsets above 2^63 survive the round trip", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"range", "fd00::/64"}, {"range_start", "fd00::8000:0:0:0"}});
    const Allocation a = store.allocate(ipam_test::request(c, "a"));
    CHECK(a.offset == k2_63);
    CHECK(a.ip.str() == "fd00::8000:0:0:0");
    CHECK(store.allocate(ipam_test::request(c, "b")).offset == k2_63 + 1);
    const json spec = store.dump(a.pool).spec_json();
    CHECK(spec["allocations"].contains("9223372036854775808"));
    CHECK(spec["allocations"].contains("9223372036854775809"));

    // A prefilled run below and the search still lands right after it.
    PoolDump big{PoolKey{"", c.ranges[0].cidr}, {}};
    for (uint128 x = k2_63 + 2; x < k2_63 + 1000; ++x) big.allocations[x] = Owner{"p", "p/" + to_decimal(x), "net1"};
    store.import_pool(big, "testnet");
    CHECK(store.allocate(ipam_test::request(c, "c")).offset == k2_63 + 1000);
    CHECK(store.verify().empty());
}

TEST_CASE("ipam store: overlapping ranges", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig wide = ipam_test::config({{"range", "10.0.0.0/24"}});
    const IpamConfig narrow = ipam_test::config({{"range", "10.0.0.0/25"}});

    SECTION("on (the default): an address is unique across the pools of a network_name") {
        CHECK(store.allocate(ipam_test::request(wide, "a")).ip.str() == "10.0.0.1");
        CHECK(store.allocate(ipam_test::request(narrow, "b")).ip.str() == "10.0.0.2");
        CHECK(store.allocate(ipam_test::request(wide, "c")).ip.str() == "10.0.0.3");
        auto static_req = ipam_test::request(narrow, "d");
        static_req.requested = 3;
        CHECK(error_code([&] { store.allocate(static_req); }) == codes::address_in_use);
        store.release({}, AttachmentId{"b", "net1"});
        CHECK(store.allocate(ipam_test::request(wide, "e")).ip.str() == "10.0.0.2");
        CHECK(store.verify().empty());
    }
    SECTION("another network_name is another address space") {
        const IpamConfig red = ipam_test::config({{"range", "10.0.0.0/25"}, {"network_name", "red"}});
        CHECK(store.allocate(ipam_test::request(wide, "a")).ip.str() == "10.0.0.1");
        CHECK(store.allocate(ipam_test::request(red, "b")).ip.str() == "10.0.0.1");
    }
    SECTION("off: pools are independent") {
        const IpamConfig off = ipam_test::config({{"range", "10.0.0.0/25"}, {"enable_overlapping_ranges", false}});
        CHECK(store.allocate(ipam_test::request(wide, "a")).ip.str() == "10.0.0.1");
        CHECK(store.allocate(ipam_test::request(off, "b")).ip.str() == "10.0.0.1");
        CHECK(store.verify().empty());
    }
}

TEST_CASE("ipam store: GC releases only this network's attachments that are not valid", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/24"}});
    for (const char* id : {"a", "b", "c"}) store.allocate(ipam_test::request(c, id, "net1", "", "red"));
    store.allocate(ipam_test::request(c, "z", "net1", "", "blue"));  // same pool, another CNI network

    const std::vector<AttachmentId> valid{{"b", "net1"}, {"c", "net9"}};
    auto released = store.gc("red", {}, valid);
    REQUIRE(released.size() == 2);
    std::set<std::string> ids;
    for (const auto& a : released) ids.insert(a.owner.container_id);
    CHECK(ids == std::set<std::string>{"a", "c"});
    CHECK(store.dump(PoolKey{"", c.ranges[0].cidr}).allocations.size() == 2);  // b and z
    CHECK(store.gc("red", {}, valid).empty());
    CHECK(store.verify().empty());
}

TEST_CASE("ipam store: files are private and the schema is shared by later openers", "[ipam]") {
    TempDir dir;
    const std::string data = dir.sub("a/b/data");
    {
        SqliteStore store(data);
        store.allocate(ipam_test::request(ipam_test::config({{"range", "10.0.0.0/24"}}), "a"));
    }
    CHECK(mode_of(data) == 0700);
    CHECK(mode_of(dir.sub("a")) == 0700);
    CHECK(mode_of(data + "/ipam.db") == 0600);
    SqliteStore again(data);
    SqliteStore concurrent(data);
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/24"}});
    CHECK(again.allocate(ipam_test::request(c, "b")).ip.str() == "10.0.0.2");
    CHECK(concurrent.allocate(ipam_test::request(c, "c")).ip.str() == "10.0.0.3");
    CHECK(again.pools().size() == 1);

    CHECK(error_code([&] { SqliteStore bad("/proc/rdmanet-no-such-dir"); }) == codes::io_failure);
}

TEST_CASE("ipam store: random operations keep runs and allocations consistent", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig a =
        ipam_test::config({{"range", "10.0.0.0/26"}, {"exclude", {"10.0.0.8/30"}}, {"gateway", "10.0.0.1"}});
    const IpamConfig b = ipam_test::config({{"range", "10.0.0.32/27"}});  // overlaps a
    std::mt19937 rng(3);
    std::map<std::string, std::set<int>> held;  // container -> pools (0 = a, 1 = b) it holds an address in
    for (int step = 0; step < 600; ++step) {
        const std::string id = "c" + std::to_string(rng() % 40);
        if (held.contains(id) && rng() % 2) {
            REQUIRE(store.release({}, AttachmentId{id, "net1"}).size() == held[id].size());
            held.erase(id);
        } else {
            const int pool = static_cast<int>(rng() % 2);
            try {
                const Allocation got = store.allocate(ipam_test::request(pool == 0 ? a : b, id));
                CHECK(got.reused == (held.contains(id) && held[id].contains(pool)));
                held[id].insert(pool);
            } catch (const IpamError& e) {
                REQUIRE(e.code == codes::range_full);
            }
        }
        if (step % 100 == 0) REQUIRE(store.verify().empty());
    }
    // Every address is held at most once across both pools.
    std::set<std::string> ips;
    for (const auto& pool : store.pools()) {
        for (const auto& [offset, owner] : store.dump(pool).allocations) {
            const std::string ip =
                rdmanet::base::IpAddress::from_u128(pool.range.address.family(), pool.range.address.to_u128() + offset)
                    .str();
            CHECK(ips.insert(ip).second);
            CHECK(ip != "10.0.0.1");
        }
    }
    CHECK(store.verify().empty());
}

TEST_CASE("ipam API: dual-stack ADD, CHECK, DEL", "[ipam]") {
    TempDir dir;
    const IpamConfig c = ipam_test::config({{"ipRanges", {{{"range", "10.0.0.0/24"}}, {{"range", "fd00::/64"}}}},
                                            {"gateway", "10.0.0.1"},
                                            {"routes", {{{"dst", "0.0.0.0/0"}}}},
                                            {"dns", {{"nameservers", {"10.0.0.53"}}}},
                                            {"data_dir", dir.sub("data")}});
    const IpamResult r = add(ipam_request(c, "ctr1"));
    REQUIRE(r.ips.size() == 2);
    CHECK(r.ips[0] == IpamIp{ip_net("10.0.0.2/24"), ip_addr("10.0.0.1")});
    CHECK(r.ips[1] == IpamIp{ip_net("fd00::1/64"), std::nullopt});
    CHECK(r.routes == c.routes);
    CHECK(r.dns.nameservers == std::vector<std::string>{"10.0.0.53"});

    CHECK_NOTHROW(check(ipam_request(c, "ctr1")));
    CHECK(error_code([&] { check(ipam_request(c, "ctr2")); }) == codes::not_allocated);

    del(ipam_request(c, "ctr1"));
    del(ipam_request(c, "ctr1"));  // twice: still fine
    CHECK(error_code([&] { check(ipam_request(c, "ctr1")); }) == codes::not_allocated);
    auto store = open_store(c.store);
    for (const auto& pool : store->pools()) CHECK(store->dump(pool).allocations.empty());
}

TEST_CASE("ipam API: a failing second range gives the first address back", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"ipRanges", {{{"range", "10.0.0.0/24"}}, {{"range", "10.1.0.0/32"}}}}});
    add(store, ipam_request(c, "first"));
    CHECK(error_code([&] { add(store, ipam_request(c, "second")); }) == codes::range_full);
    CHECK(store.dump(PoolKey{"", c.ranges[0].cidr}).allocations.size() == 1);
    CHECK(store.verify().empty());
}

TEST_CASE("ipam API: static requests", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c =
        ipam_test::config({{"ipRanges", {{{"range", "10.0.0.0/24"}}, {{"range", "fd00::/64"}}}},
                           {"addresses", {{{"address", "192.168.9.9/24"}, {"gateway", "192.168.9.1"}}}}});
    auto req = ipam_request(c, "s1");
    req.static_ips = {"10.0.0.77", "172.16.0.5/16"};
    const IpamResult r = add(store, req);
    REQUIRE(r.ips.size() == 4);
    CHECK(r.ips[0].address == ip_net("10.0.0.77/24"));
    CHECK(r.ips[1].address == ip_net("fd00::1/64"));
    CHECK(r.ips[2].address == ip_net("172.16.0.5/16"));  // inside no range: returned as-is
    CHECK(r.ips[3] == IpamIp{ip_net("192.168.9.9/24"), ip_addr("192.168.9.1")});

    auto clash = ipam_request(c, "s2");
    clash.static_ips = {"10.0.0.77/24"};
    CHECK(error_code([&] { add(store, clash); }) == codes::address_in_use);
    // Nothing is left behind by the failed ADD (the IPv6 range was not reached, IPv4 failed first).
    CHECK(store.dump(PoolKey{"", c.ranges[1].cidr}).allocations.size() == 1);

    for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
             {"10.0.0.0"}, {"10.0.0.255"}, {"10.0.0.5/16"}, {"10.0.0.5", "10.0.0.6"}, {"172.16.0.5"}, {"x"}}) {
        auto r2 = ipam_request(c, "s3");
        r2.static_ips = bad;
        INFO(bad.front());
        CHECK(error_code([&] { add(store, r2); }) == codes::invalid_config);
    }
    CHECK(store.verify().empty());
}

TEST_CASE("ipam API: podref falls back to the container id, GC through the API", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/24"}});
    CHECK(make_podref("ns", "pod", "cid") == "ns/pod");
    CHECK(make_podref("", "pod", "cid") == "cid");
    CHECK(make_podref("ns", "", "cid") == "cid");

    IpamRequest anon{c, "testnet", "cid-1", "net1", "", {}, {}};
    add(store, anon);
    auto found = store.find(PoolKey{"", c.ranges[0].cidr}, "cid-1", "net1");
    REQUIRE(found);
    add(store, ipam_request(c, "cid-2"));
    const std::vector<AttachmentId> valid{{"cid-2", "net1"}};
    auto released = gc(store, c, "testnet", valid);
    REQUIRE(released.size() == 1);
    CHECK(released[0].owner.container_id == "cid-1");
    CHECK(error_code([&] { add(store, IpamRequest{c, "testnet", "", "net1", "", {}, {}}); }) == codes::invalid_config);
}

TEST_CASE("ipam store: a rolled-back pool creation does not confuse later pools", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    // The first request creates its pool, then fails (static broadcast) and rolls back: SQLite
    // will hand the same row id to the next pool, which must not be taken for the first one.
    const IpamConfig a = ipam_test::config({{"range", "10.0.0.0/30"}});
    auto failing = ipam_test::request(a, "x");
    failing.requested = 3;
    CHECK(error_code([&] { store.allocate(failing); }) == codes::invalid_config);
    CHECK(store.pools().empty());

    const IpamConfig b = ipam_test::config({{"range", "10.9.0.0/24"}});
    const Allocation got = store.allocate(ipam_test::request(b, "y"));
    CHECK(got.pool.range.str() == "10.9.0.0/24");
    CHECK(got.ip.str() == "10.9.0.1");
    const Allocation again = store.allocate(ipam_test::request(a, "z"));
    CHECK(again.ip.str() == "10.0.0.1");
    CHECK(store.pools().size() == 2);
    CHECK(store.verify().empty());
}

TEST_CASE("ipam store: verify() reports runs that disagree with the allocations", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/24"}});
    store.allocate(ipam_test::request(c, "a"));
    store.allocate(ipam_test::request(c, "b"));
    REQUIRE(store.verify().empty());

    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(store.path().c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "DELETE FROM runs WHERE space LIKE 'p%'", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    const auto problems = store.verify();
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Catch::Contains("do not match"));
}

TEST_CASE("ipam store: re-ADD into a full pool gets the address it holds", "[ipam]") {
    // An ADD first decides as if the attachment were new; a full pool must not fail a re-ADD that
    // already holds an address there.
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/30"}});  // .1 and .2
    const Allocation a = store.allocate(ipam_test::request(c, "a"));
    store.allocate(ipam_test::request(c, "b"));
    CHECK(error_code([&] { store.allocate(ipam_test::request(c, "c")); }) == codes::range_full);
    const Allocation again = store.allocate(ipam_test::request(c, "a2", "net1", "ns/a"));
    CHECK(again.ip == a.ip);
    CHECK(again.reused);
    CHECK(again.owner.container_id == "a2");
    CHECK(store.verify().empty());
}

namespace {

// Runs SQL on the store's database through a separate connection with SQLite's default VFS.
std::vector<std::string> raw_sql(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    std::vector<std::string> out;
    char* err = nullptr;
    const int rc = sqlite3_exec(
        db, sql.c_str(),
        [](void* rows, int n, char** values, char**) {
            for (int i = 0; i < n; ++i)
                static_cast<std::vector<std::string>*>(rows)->push_back(values[i] ? values[i] : "NULL");
            return 0;
        },
        &out, &err);
    const std::string message = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    INFO(message);
    REQUIRE(rc == SQLITE_OK);
    return out;
}

// The layout every store had before schema version 2: allocations keyed by (pool, offset), 4 KiB pages.
constexpr const char* kSchemaV1 = R"sql(
PRAGMA journal_mode=WAL;
CREATE TABLE pools(
    id           INTEGER PRIMARY KEY,
    network_name TEXT NOT NULL,
    range        TEXT NOT NULL,
    UNIQUE(network_name, range));
CREATE TABLE allocations(
    pool         INTEGER NOT NULL,
    offset       BLOB NOT NULL,
    container_id TEXT NOT NULL,
    podref       TEXT NOT NULL,
    ifname       TEXT NOT NULL,
    network      TEXT NOT NULL,
    reservation  TEXT,
    PRIMARY KEY(pool, offset)) WITHOUT ROWID;
CREATE UNIQUE INDEX allocations_owner ON allocations(pool, podref, ifname);
CREATE INDEX allocations_attachment ON allocations(container_id, ifname);
CREATE TABLE runs(
    space        TEXT NOT NULL,
    lo           BLOB NOT NULL,
    hi           BLOB NOT NULL,
    PRIMARY KEY(space, lo)) WITHOUT ROWID;
-- What an earlier rdmanet left after ADDs of ns/old (10.0.0.1) and ns/older (10.0.0.2) in
-- 10.0.0.0/24 with overlap reservations.
INSERT INTO pools(id, network_name, range) VALUES(1, '', '10.0.0.0/24');
INSERT INTO allocations VALUES(1, x'00000000000000000000000000000001', 'c-old', 'ns/old', 'net1', 'testnet', 'r4:');
INSERT INTO allocations VALUES(1, x'00000000000000000000000000000002', 'c-older', 'ns/older', 'net1', 'testnet', 'r4:');
INSERT INTO runs VALUES('p1', x'00000000000000000000000000000001', x'00000000000000000000000000000002');
INSERT INTO runs VALUES('r4:', x'0000000000000000000000000a000001', x'0000000000000000000000000a000002');
PRAGMA user_version=1;
)sql";

}  // namespace

TEST_CASE("ipam store: a store created with schema version 1 keeps working as it is", "[ipam]") {
    TempDir dir;
    const std::string data = dir.sub("data");
    std::filesystem::create_directories(data);
    const std::string path = data + "/" + SqliteStore::kFileName;
    raw_sql(path, kSchemaV1);
    {
        SqliteStore store(data);
        REQUIRE(store.verify().empty());
        const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/24"}});
        CHECK(store.allocate(ipam_test::request(c, "c-new")).ip.str() == "10.0.0.3");
        const Allocation again = store.allocate(ipam_test::request(c, "c-old-2", "net1", "ns/old"));
        CHECK(again.ip.str() == "10.0.0.1");
        CHECK(again.reused);
        auto released = store.release({}, AttachmentId{"c-older", "net1"});
        REQUIRE(released.size() == 1);
        CHECK(released[0].ip.str() == "10.0.0.2");
        CHECK(store.allocate(ipam_test::request(c, "c-next")).ip.str() == "10.0.0.2");
        const auto dump = store.dump(PoolKey{"", c.ranges[0].cidr});
        CHECK(dump.spec_json()["allocations"].size() == 3);
        CHECK(dump.allocations.at(1).container_id == "c-old-2");
        const AttachmentId keep[] = {{"c-old-2", "net1"}};
        CHECK(store.gc("testnet", {}, keep).size() == 2);
        CHECK(store.verify().empty());
    }
    // Still version 1, still keyed by (pool, offset): nothing was migrated behind the user's back,
    // and the old key still refuses a second holder of an offset.
    CHECK(raw_sql(path, "PRAGMA user_version") == std::vector<std::string>{"1"});
    CHECK(raw_sql(path, "SELECT count(*) FROM allocations") == std::vector<std::string>{"1"});
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    CHECK(sqlite3_exec(
              db,
              "INSERT INTO allocations VALUES(1, x'00000000000000000000000000000001', 'x', 'ns/x', 'net1', 'n', NULL)",
              nullptr, nullptr, nullptr) == SQLITE_CONSTRAINT);
    sqlite3_close(db);
}

TEST_CASE("ipam store: new stores use schema version 2, keyed by owner", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/24"}});
    store.allocate(ipam_test::request(c, "a"));
    CHECK(raw_sql(store.path(), "PRAGMA user_version") == std::vector<std::string>{"2"});
    // One lookup index besides the key (container id for DEL), so an ADD changes three leaves.
    CHECK(raw_sql(store.path(),
                  "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'allocations' "
                  "AND sql IS NOT NULL") == std::vector<std::string>{"allocations_attachment"});
    // Nothing in this layout refuses a second row for an offset (the runs do, for every write the
    // store makes): verify() reports one written behind its back.
    raw_sql(store.path(),
            "INSERT INTO allocations(pool, podref, ifname, offset, container_id, network) "
            "VALUES(1, 'ns/dup', 'net1', x'00000000000000000000000000000001', 'dup', 'testnet')");
    const auto problems = store.verify();
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Catch::Contains("offset 1") && Catch::Contains("allocated twice"));
    CHECK(store.allocate(ipam_test::request(c, "b")).ip.str() == "10.0.0.2");
    // A later version's store is refused rather than misread.
    raw_sql(store.path(), "PRAGMA user_version=3");
    CHECK(error_code([&] { SqliteStore newer(dir.sub("data")); }) == codes::io_failure);
}

TEST_CASE("ipam store: another connection sees every commit, before and after WAL checkpoints", "[ipam]") {
    // Another connection in this process must see exactly what the store committed, whether it is
    // still in the WAL or checkpointed into the database (the WAL wraps every ~1000 frames).
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/16"}});
    for (int i = 0; i < 700; ++i) {
        store.allocate(ipam_test::request(c, "c" + std::to_string(i)));
        if (i % 3 == 0) store.release({}, AttachmentId{"c" + std::to_string(i), "net1"});
        if (i % 150 == 0) {
            CHECK(raw_sql(store.path(), "PRAGMA integrity_check") == std::vector<std::string>{"ok"});
            CHECK(raw_sql(store.path(), "SELECT count(*) FROM allocations") ==
                  std::vector<std::string>{std::to_string(i - i / 3)});
        }
    }
    CHECK(raw_sql(store.path(), "PRAGMA integrity_check") == std::vector<std::string>{"ok"});
    CHECK(raw_sql(store.path(), "SELECT count(*) FROM allocations") == std::vector<std::string>{"466"});
    CHECK(store.verify().empty());
}

namespace {

// What a process killed right now leaves behind: the database and its WAL as they are in the
// files (not in any process's memory), copied to `to` and opened there with SQLite's default VFS,
// which recovers the WAL from its frame checksums. Returns the query's rows.
std::vector<std::string> recover_copy(const std::string& db_path, const std::string& to, const std::string& sql) {
    std::filesystem::remove_all(to);
    std::filesystem::create_directories(to);
    const std::string copy = to + "/copy.db";
    std::filesystem::copy_file(db_path, copy);
    if (std::filesystem::exists(db_path + "-wal")) std::filesystem::copy_file(db_path + "-wal", copy + "-wal");
    return raw_sql(copy, sql);
}

}  // namespace

TEST_CASE("ipam store: the files after each commit recover to exactly the committed allocations", "[ipam]") {
    TempDir dir;
    SqliteStore store(dir.sub("data"));
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/16"}});
    int held = 0;
    for (int i = 0; i < 60; ++i) {
        store.allocate(ipam_test::request(c, "c" + std::to_string(i)));
        ++held;
        if (i % 4 == 1) {
            store.release({}, AttachmentId{"c" + std::to_string(i - 1), "net1"});
            --held;
        }
        REQUIRE(recover_copy(store.path(), dir.sub("copy"), "SELECT count(*) FROM allocations") ==
                std::vector<std::string>{std::to_string(held)});
    }
    CHECK(recover_copy(store.path(), dir.sub("copy"), "PRAGMA integrity_check") == std::vector<std::string>{"ok"});
}
