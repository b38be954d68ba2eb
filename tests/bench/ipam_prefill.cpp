// ipam_prefill: fills a pool of the local IPAM store with N allocations in one transaction, for
// tests/bench/run_bench.sh's whole-process "60k pool vs empty pool" comparison.
//
//   ipam_prefill DATA_DIR RANGE COUNT NETWORK
//
// The allocations are offsets 1..COUNT of RANGE's pool (what lowest-first allocation would have
// produced), owned by prefill-<k> / bench/prefill-<k> / net1 and recorded as made by CNI network
// NETWORK. Offsets the range could not hand out (network, broadcast) are refused by the import.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"

using namespace rdmanet::ipam;

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s DATA_DIR RANGE COUNT NETWORK\n", argv[0]);
        return 2;
    }
    try {
        const std::string data_dir = argv[1];
        const IpamConfig config =
            parse_ipam_config({{"type", "rdmanet-ipam"}, {"range", argv[2]}, {"data_dir", data_dir}});
        const long count = std::strtol(argv[3], nullptr, 10);
        if (count < 0) throw IpamError(codes::invalid_config, "COUNT must be >= 0");
        const Range& range = config.ranges.at(0);
        PoolDump dump{PoolKey{config.network_name, range.cidr}, {}};
        for (long k = 1; k <= count; ++k) {
            if (!range.allocatable(static_cast<uint128>(k)))
                throw IpamError(codes::invalid_config,
                                "offset " + std::to_string(k) + " is not allocatable in " + range.describe());
            const std::string id = "prefill-" + std::to_string(k);
            dump.allocations.emplace_hint(dump.allocations.end(), static_cast<uint128>(k),
                                          Owner{id, "bench/" + id, "net1"});
        }
        SqliteStore store(data_dir);
        store.import_pool(dump, argv[4]);
        std::printf("%ld allocations in pool %s of %s\n", count, dump.pool.name().c_str(), store.path().c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ipam_prefill: %s\n", e.what());
        return 1;
    }
}
