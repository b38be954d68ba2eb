// nv-ipam block claim at cluster scale, in process: what a node without a block does with the
// pool it read (parse the object with every other node's status entry, pick the first free
// block or subnet in the controller's order, build the status it writes back), for 15k, 30k and
// 60k other nodes. The API round trips are left out: they are the same two requests at any size.
// Before the one-pass claim this was quadratic in the nodes (60k: 15-25 s, past the ADD's 8 s
// claim budget); it must stay far inside that budget.
//
//   nvipam_claim_bench [--rounds N]     (default 5; median and max per row, milliseconds)
//
// Exits 1 when a row's median exceeds the budget. etcd holds at most 1.5 MiB per object (about
// 25k IPPool entries), so 60k nodes is past what one real pool can hold: the row bounds the
// logic, not a cluster.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/nvipam/blocks.hpp"
#include "rdmanet/ipam/nvipam/pool.hpp"

using namespace rdmanet::ipam::nvipam;
using nlohmann::json;
using rdmanet::base::IpAddress;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kBudgetMs = 8000;

std::string node_name(int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "node-%05d", i);
    return buf;
}

// A pool whose first `nodes` blocks/subnets are held, in status order by node name (as the
// controller writes it): the new node's block is the one after all of them.
json pool_object(PoolType type, int nodes) {
    json allocations = json::array();
    const std::uint32_t base = (10u << 24);
    for (int i = 0; i < nodes; ++i) {
        if (type == PoolType::ippool) {
            const std::uint32_t start = base + 1 + static_cast<std::uint32_t>(i) * 16;
            allocations.push_back({{"nodeName", node_name(i)},
                                   {"startIP", IpAddress::from_u128(IpAddress::Family::v4, start).str()},
                                   {"endIP", IpAddress::from_u128(IpAddress::Family::v4, start + 15).str()}});
        } else {
            const std::uint32_t start = base + static_cast<std::uint32_t>(i) * 256;
            allocations.push_back({{"nodeName", node_name(i)},
                                   {"prefix", IpAddress::from_u128(IpAddress::Family::v4, start).str() + "/24"},
                                   {"gateway", IpAddress::from_u128(IpAddress::Family::v4, start + 1).str()}});
        }
    }
    const json spec = type == PoolType::ippool
                          ? json{{"subnet", "10.0.0.0/8"}, {"perNodeBlockSize", 16}}
                          : json{{"cidr", "10.0.0.0/8"}, {"perNodeNetworkPrefix", 24}, {"gatewayIndex", 1}};
    return {{"apiVersion", "nv-ipam.nvidia.com/v1alpha1"},
            {"kind", type == PoolType::ippool ? "IPPool" : "CIDRPool"},
            {"metadata", {{"name", "rail"}, {"namespace", "kube-system"}, {"resourceVersion", "1"}}},
            {"spec", spec},
            {"status", {{"allocations", allocations}}}};
}

// One claim's work on the text as it came from the API server; returns milliseconds.
double claim_ms(PoolType type, const std::string& text, const std::string& node) {
    const auto t0 = Clock::now();
    json object = json::parse(text);
    const Pool pool = parse_pool(object, type);
    const auto next = next_allocation(pool, node);
    if (!next) {
        std::fprintf(stderr, "no free block: the fixture is wrong\n");
        std::exit(2);
    }
    std::vector<NodeAllocation> entries;
    for (const auto& a : pool.allocations)
        if (a.node != node) entries.push_back(a);
    entries.push_back(*next);
    object["status"] = {{"allocations", allocations_json(pool, entries)}};
    const std::string body = object.dump();
    const auto t1 = Clock::now();
    if (body.size() < text.size()) std::exit(2);  // keeps the work observable
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    int rounds = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--rounds" && i + 1 < argc)
            rounds = std::max(1, std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: nvipam_claim_bench [--rounds N]\n");
            return 2;
        }
    }
    bool over = false;
    std::printf("%-9s %7s %9s %11s %9s %9s\n", "pool", "nodes", "body_MiB", "median_ms", "max_ms", "budget");
    for (PoolType type : {PoolType::ippool, PoolType::cidrpool}) {
        for (int nodes : {15000, 30000, 60000}) {
            const std::string text = pool_object(type, nodes).dump();
            std::vector<double> ms;
            for (int r = 0; r < rounds; ++r) ms.push_back(claim_ms(type, text, "node-new"));
            std::sort(ms.begin(), ms.end());
            const double median = ms[ms.size() / 2];
            over = over || median > kBudgetMs;
            std::printf("%-9s %7d %9.2f %11.1f %9.1f %9s\n", type == PoolType::ippool ? "IPPool" : "CIDRPool", nodes,
                        static_cast<double>(text.size()) / (1 << 20), median, ms.back(),
                        median > kBudgetMs ? "OVER" : "ok");
        }
    }
    return over ? 1 : 0;
}
