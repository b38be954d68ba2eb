// The local IPAM store under real concurrent processes (fork) and SIGKILL at random moments.
// No privileges needed: everything lives in a temporary directory.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "../unit/ipam_test_util.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/ipam.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"

using namespace rdmanet::ipam;
using ipam_test::TempDir;
using nlohmann::json;
using rdmanet::base::IpAddress;

namespace {

// Runs `body` in a child process that never returns into Catch2. Exit status: body's value, or
// 99 when it threw (the message goes to stderr).
pid_t spawn(const std::function<int()>& body) {
    std::fflush(nullptr);  // or the child would print the parent's buffered output a second time
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int rc = 99;
        try {
            rc = body();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "child %d: %s\n", static_cast<int>(::getpid()), e.what());
        }
        ::_exit(rc);
    }
    return pid;
}

// Waits for every pid; returns their raw wait statuses.
std::vector<int> wait_all(const std::vector<pid_t>& pids) {
    std::vector<int> statuses;
    for (pid_t pid : pids) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        statuses.push_back(status);
    }
    return statuses;
}

IpamRequest request_for(const IpamConfig& c, const std::string& container_id) {
    return IpamRequest{c, "procnet", container_id, "net1", "ns/" + container_id, {}, {}};
}

struct Outcome {
    std::map<std::string, std::string> ip_of;  // container id -> address
    int full = 0;
};

// 16 processes x 50 ADDs through the in-process API on one range. Each child writes
// "<container> <address>" or "<container> FULL" lines to its own file.
Outcome run_adds(const TempDir& dir, const IpamConfig& c, int processes, int per_process) {
    std::vector<pid_t> pids;
    for (int p = 0; p < processes; ++p) {
        pids.push_back(spawn([&, p] {
            SqliteStore store(c.store.data_dir);  // opened after fork: never share a connection
            std::ofstream out(dir.sub("out-" + std::to_string(p)));
            for (int k = 0; k < per_process; ++k) {
                const std::string id = "ctr-" + std::to_string(p) + "-" + std::to_string(k);
                try {
                    const IpamResult r = add(store, request_for(c, id));
                    out << id << " " << r.ips.at(0).address.address.str() << "\n";
                } catch (const IpamError& e) {
                    if (e.code != codes::range_full) throw;
                    out << id << " FULL\n";
                }
            }
            return 0;
        }));
    }
    for (int status : wait_all(pids)) REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    Outcome o;
    for (int p = 0; p < processes; ++p) {
        std::ifstream in(dir.sub("out-" + std::to_string(p)));
        std::string id, ip;
        int lines = 0;
        while (in >> id >> ip) {
            ++lines;
            if (ip == "FULL") {
                ++o.full;
            } else {
                o.ip_of[id] = ip;
            }
        }
        REQUIRE(lines == per_process);
    }
    return o;
}

void run_dels(const IpamConfig& c, int processes, int per_process) {
    std::vector<pid_t> pids;
    for (int p = 0; p < processes; ++p) {
        pids.push_back(spawn([&, p] {
            SqliteStore store(c.store.data_dir);
            for (int k = 0; k < per_process; ++k)
                del(store, request_for(c, "ctr-" + std::to_string(p) + "-" + std::to_string(k)));
            return 0;
        }));
    }
    for (int status : wait_all(pids)) REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

// Every returned address is unique, allocatable in its range, and exactly what the pool holds.
void require_consistent(const IpamConfig& c, const Outcome& o) {
    const Range& r = c.ranges.at(0);
    std::set<std::string> seen;
    for (const auto& [id, ip_text] : o.ip_of) {
        INFO(id << " " << ip_text);
        REQUIRE(seen.insert(ip_text).second);
        auto ip = IpAddress::parse(ip_text);
        REQUIRE(ip);
        auto offset = r.offset_of(*ip);
        REQUIRE(offset);
        REQUIRE(r.allocatable(*offset));
        REQUIRE(*ip != r.cidr.first());
        REQUIRE(*ip != r.cidr.last());
        REQUIRE(*ip != *c.gateway);
    }
    SqliteStore store(c.store.data_dir);
    const PoolDump dump = store.dump(PoolKey{c.network_name, r.cidr});
    REQUIRE(dump.allocations.size() == o.ip_of.size());
    for (const auto& [offset, owner] : dump.allocations) {
        REQUIRE(o.ip_of.at(owner.container_id) == r.address_at(offset).str());
    }
    REQUIRE(store.verify().empty());
}

}  // namespace

TEST_CASE("ipam processes: 16 x 50 concurrent ADDs, all unique, then all DELs empty the pool", "[ipam]") {
    TempDir dir;
    // A /22 so that the 800 addresses fit beside the exclusions (a /24 has 254 in all).
    const IpamConfig c = ipam_test::config({{"range", "10.20.0.0/22"},
                                            {"gateway", "10.20.0.1"},
                                            {"exclude", {"10.20.1.0/25", "10.20.2.7", "10.20.0.16/28"}},
                                            {"data_dir", dir.sub("data")}});
    const Outcome o = run_adds(dir, c, 16, 50);
    CHECK(o.full == 0);
    REQUIRE(o.ip_of.size() == 800);
    require_consistent(c, o);
    // Lowest-first: the 800 addresses are exactly the 800 lowest allocatable ones.
    std::set<uint128> offsets;
    for (const auto& [id, ip] : o.ip_of) offsets.insert(*c.ranges[0].offset_of(*IpAddress::parse(ip)));
    uint128 expected_count = 0;
    for (uint128 x = c.ranges[0].first; x <= *offsets.rbegin(); ++x) expected_count += c.ranges[0].allocatable(x);
    CHECK(expected_count == 800);

    run_dels(c, 16, 50);
    SqliteStore store(c.store.data_dir);
    CHECK(store.dump(PoolKey{"", c.ranges[0].cidr}).allocations.empty());
    CHECK(store.verify().empty());
}

TEST_CASE("ipam processes: 16 x 50 ADDs racing for a /24 with exclusions", "[ipam]") {
    TempDir dir;
    const IpamConfig c = ipam_test::config({{"range", "10.30.0.0/24"},
                                            {"gateway", "10.30.0.1"},
                                            {"exclude", {"10.30.0.64/26", "10.30.0.200"}},
                                            {"data_dir", dir.sub("data")}});
    const int usable = 254 - 1 - 64 - 1;
    const Outcome o = run_adds(dir, c, 16, 50);
    CHECK(static_cast<int>(o.ip_of.size()) == usable);  // every address handed out exactly once
    CHECK(o.full == 800 - usable);                      // the rest told "range full"
    require_consistent(c, o);
    run_dels(c, 16, 50);
    SqliteStore store(c.store.data_dir);
    CHECK(store.dump(PoolKey{"", c.ranges[0].cidr}).allocations.empty());
}

TEST_CASE("ipam processes: SIGKILL at random moments, then DEL + GC leave exactly the live attachments", "[ipam]") {
    TempDir dir;
    // Dual stack: an ADD is two transactions plus a rollback path, all of which can be cut.
    const IpamConfig c = ipam_test::config({{"ipRanges", {{{"range", "10.40.0.0/16"}}, {{"range", "fd40::/64"}}}},
                                            {"gateway", "10.40.0.1"},
                                            {"data_dir", dir.sub("data")}});
    std::map<std::string, std::vector<std::string>> live;  // container -> addresses
    {
        SqliteStore store(c.store.data_dir);
        for (int k = 0; k < 20; ++k) {
            const std::string id = "live-" + std::to_string(k);
            for (const auto& ip : add(store, request_for(c, id)).ips) live[id].push_back(ip.address.str());
        }
    }  // closed before forking

    std::mt19937 rng(1234);
    int killed_mid_work = 0;
    for (int round = 0; round < 8; ++round) {
        std::vector<pid_t> pids;
        for (int p = 0; p < 8; ++p) {
            const unsigned seed = static_cast<unsigned>(rng());
            pids.push_back(spawn([&, p, round, seed] {
                std::mt19937 local(seed);
                SqliteStore store(c.store.data_dir);
                for (int j = 0;; ++j) {
                    const std::string id =
                        "crash-" + std::to_string(round) + "-" + std::to_string(p) + "-" + std::to_string(j);
                    add(store, request_for(c, id));
                    if (local() % 2) del(store, request_for(c, id));
                    if (j % 7 == 0) store.gc("othernet", {}, {});  // a GC of another network: touches nothing of ours
                }
                return 0;
            }));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 40));
        for (pid_t pid : pids) {
            ::kill(pid, SIGKILL);
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
        }
        for (int status : wait_all(pids)) {
            // Killed, never failed on its own (a child that threw would have exited 99).
            REQUIRE(WIFSIGNALED(status));
            killed_mid_work += WTERMSIG(status) == SIGKILL;
        }
    }
    CHECK(killed_mid_work == 64);

    SqliteStore store(c.store.data_dir);
    REQUIRE(store.verify().empty());
    // The live attachments kept their addresses through the chaos.
    for (const auto& [id, ips] : live) {
        for (std::size_t i = 0; i < c.ranges.size(); ++i) {
            auto a = store.find(PoolKey{"", c.ranges[i].cidr}, "ns/" + id, "net1");
            REQUIRE(a);
            CHECK(a->ip.str() + "/" + std::to_string(c.ranges[i].cidr.prefix) == ips[i]);
        }
    }
    // DEL of half of them, then GC with the other half as the valid attachments.
    std::vector<AttachmentId> valid;
    int k = 0;
    for (const auto& [id, ips] : live) {
        if (k++ % 2) {
            del(store, request_for(c, id));
        } else {
            valid.push_back({id, "net1"});
        }
    }
    gc(store, c, "procnet", valid);
    REQUIRE(store.verify().empty());
    for (std::size_t i = 0; i < c.ranges.size(); ++i) {
        const PoolDump dump = store.dump(PoolKey{"", c.ranges[i].cidr});
        std::set<std::string> holders;
        for (const auto& [offset, owner] : dump.allocations) holders.insert(owner.container_id);
        std::set<std::string> expected;
        for (const auto& v : valid) expected.insert(v.container_id);
        CHECK(holders == expected);
        for (const auto& [offset, owner] : dump.allocations) {
            CHECK(c.ranges[i].address_at(offset).str() + "/" + std::to_string(c.ranges[i].cidr.prefix) ==
                  live.at(owner.container_id)[i]);
        }
    }
}
