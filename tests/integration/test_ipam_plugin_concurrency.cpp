// 16 concurrent streams of real bin/rdmanet-ipam processes, 50 ADDs each, on one range with
// exclusions: every address unique, inside the range, outside the exclusions, never the gateway,
// network or broadcast; the store (seen through bin/rdmanetctl) agrees; all DELs empty the pool.
#include <thread>

#include "test_ipam_plugin_util.hpp"

using namespace ipam_plugin_test;
using ipam_test::TempDir;

namespace {

constexpr int kStreams = 16;
constexpr int kPerStream = 50;

std::string id_of(int stream, int k) { return "cc-" + std::to_string(stream) + "-" + std::to_string(k); }

// Runs `verb` for every attachment, kStreams processes at a time (one thread per stream, each
// exec'ing its 50 plugin processes one after the other). Catch2 is not thread-safe: the threads
// only record; the caller checks.
std::vector<std::vector<CniOutcome>> run_streams(const json& conf, const std::string& verb) {
    std::vector<std::vector<CniOutcome>> outcomes(kStreams);
    std::vector<std::thread> threads;
    for (int s = 0; s < kStreams; ++s) {
        threads.emplace_back([&, s] {
            for (int k = 0; k < kPerStream; ++k) {
                const std::string id = id_of(s, k);
                outcomes[s].push_back(ipam_call({verb, id, "net1", pod_args("conc", "pod-" + id)}, conf));
            }
        });
    }
    for (auto& t : threads) t.join();
    return outcomes;
}

}  // namespace

TEST_CASE("rdmanet-ipam: 16 processes x 50 ADDs on one range are unique and outside exclusions, DELs empty it",
          "[ipam]") {
    TempDir dir;
    const std::string data = dir.sub("data");
    // A /22: 800 addresses fit beside the exclusions (a /24 holds only 254).
    const json conf =
        net_conf("conc-net", {{"range", "10.70.0.0/22"},
                              {"gateway", "10.70.0.1"},
                              {"exclude", {"10.70.1.0/25", "10.70.2.7", "10.70.0.16/28", "10.70.3.250/31"}},
                              {"data_dir", data}});
    const std::uint32_t base = *v4("10.70.0.0");
    const std::uint32_t broadcast = *v4("10.70.3.255");
    const std::vector<std::pair<std::uint32_t, std::uint32_t>> excluded = {
        {*v4("10.70.1.0"), *v4("10.70.1.127")},
        {*v4("10.70.2.7"), *v4("10.70.2.7")},
        {*v4("10.70.0.16"), *v4("10.70.0.31")},
        {*v4("10.70.3.250"), *v4("10.70.3.251")},
    };

    const auto start = std::chrono::steady_clock::now();
    const auto adds = run_streams(conf, "ADD");
    const auto add_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::map<std::string, std::string> ip_of;  // container id -> address
    std::set<std::uint32_t> values;
    for (int s = 0; s < kStreams; ++s) {
        REQUIRE(adds[s].size() == kPerStream);
        for (int k = 0; k < kPerStream; ++k) {
            const auto& o = adds[s][k];
            INFO(id_of(s, k) << ": " << o.describe());
            REQUIRE(o.ok());
            REQUIRE(o.json["ips"].size() == 1);
            REQUIRE(o.json["ips"][0].value("address", "").ends_with("/22"));
            CHECK(o.json["ips"][0].value("gateway", "") == "10.70.0.1");
            const std::string ip = first_ip(o);
            const auto value = v4(ip);
            REQUIRE(value);
            CHECK(values.insert(*value).second);  // unique
            CHECK(*value > base);                 // inside the range, not the network address
            CHECK(*value < broadcast);            // not the broadcast
            CHECK(*value != *v4("10.70.0.1"));    // not the gateway
            for (const auto& [lo, hi] : excluded) CHECK_FALSE((*value >= lo && *value <= hi));
            ip_of[id_of(s, k)] = ip;
        }
    }
    REQUIRE(values.size() == kStreams * kPerStream);
    // Lowest free first: the 800 addresses are the 800 lowest allowed ones (no holes were left).
    std::uint32_t allowed_below_max = 0;
    for (std::uint32_t x = base + 2; x <= *values.rbegin(); ++x) {
        bool out = false;
        for (const auto& [lo, hi] : excluded) out |= x >= lo && x <= hi;
        allowed_below_max += !out;
    }
    CHECK(allowed_below_max == values.size());

    // The store, as rdmanetctl shows it, holds exactly these.
    const auto allocs = allocations_of(pool_list_json(data), "10.70.0.0-22");
    REQUIRE(allocs.size() == ip_of.size());
    for (const auto& [offset, owner] : allocs) {
        const std::string id = owner.value("id", "");
        INFO("offset " << offset << " " << owner.dump());
        REQUIRE(ip_of.count(id) == 1);
        CHECK(std::to_string(*v4(ip_of.at(id)) - base) == offset);
        CHECK(owner.value("podref", "") == "conc/pod-" + id);
        CHECK(owner.value("ifname", "") == "net1");
    }
    require_verify_clean(data);

    const auto dels = run_streams(conf, "DEL");
    const auto total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (int s = 0; s < kStreams; ++s) {
        for (int k = 0; k < kPerStream; ++k) {
            INFO(id_of(s, k) << ": " << dels[s][k].describe());
            CHECK(dels[s][k].ok());
        }
    }
    const auto after = pool_list_json(data);
    REQUIRE(after.size() == 1);
    CHECK(after[0]["spec"]["allocations"].empty());
    require_verify_clean(data);
    WARN("800 ADD processes in " << add_seconds << " s, 800 ADD + 800 DEL in " << total_seconds << " s");
}
