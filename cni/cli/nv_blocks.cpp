// rdmanetctl pool blocks: this node's blocks and subnets of nv-ipam pools (the node's cached copy,
// no API request), with gateway, used and free addresses, and who wrote the status entry.
#include "rdmanet/cni/cli/pool.hpp"

#include <ostream>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"
#include "rdmanet/ipam/nvipam/node_block.hpp"
#include "rdmanet/base/exit_status.hpp"

namespace rdmanet::cni::cli {

namespace {

using ipam::uint128;

uint128 allocatable(const ipam::Range& r) {
    uint128 n = r.last - r.first + 1;
    for (const auto& iv : r.excluded) n -= iv.hi - iv.lo + 1;
    return n;
}

}  // namespace

std::vector<NvBlockUsage> nv_block_usage(const std::string& data_dir) {
    std::vector<NvBlockUsage> out;
    const auto blocks = ipam::nvipam::cached_blocks(data_dir);
    if (blocks.empty()) return out;
    ipam::SqliteStore store(ipam::nvipam::local_store_dir(data_dir));
    const auto pools = store.pools();
    for (const auto& b : blocks) {
        const ipam::Range r = ipam::nvipam::node_range(b.pool, b.allocation);
        NvBlockUsage u;
        u.pool = b.pool.where();
        u.node = b.node;
        u.block = b.ref.type == ipam::nvipam::PoolType::ippool ? b.allocation.start.str() + "-" + b.allocation.end.str()
                                                               : b.allocation.prefix.str();
        u.gateway = r.gateway ? r.gateway->str() : "";
        u.source = b.source == "rdmanet" ? "rdmanet (claimed without nv-ipam's controller)" : "nv-ipam's controller";
        const uint128 size = allocatable(r);
        for (const auto& key : pools) {
            if (key.range != r.cidr) continue;
            const auto dump = store.dump(key);
            for (const auto& [offset, owner] : dump.allocations)
                if (offset >= r.first && offset <= r.last) ++u.used;
        }
        u.free = static_cast<std::uint64_t>(size - std::min<uint128>(size, u.used));
        out.push_back(std::move(u));
    }
    return out;
}

int pool_blocks(const PoolOptions& options, std::ostream& out, std::ostream& err) {
    return base::exit_status_of(err, "rdmanetctl pool blocks", [&] {
        const auto usage = nv_block_usage(options.data_dir);
        if (options.json) {
            nlohmann::json list = nlohmann::json::array();
            for (const auto& u : usage)
                list.push_back({{"pool", u.pool},
                                {"node", u.node},
                                {"block", u.block},
                                {"gateway", u.gateway},
                                {"used", u.used},
                                {"free", u.free},
                                {"source", u.source}});
            out << list.dump(2) << '\n';
            return 0;
        }
        if (usage.empty()) out << "no nv-ipam pool block on this node (in " << options.data_dir << ")\n";
        for (const auto& u : usage) {
            out << u.pool << " node " << u.node << " block " << u.block;
            if (!u.gateway.empty()) out << " gateway " << u.gateway;
            out << " used " << u.used << " free " << u.free << " source " << u.source << '\n';
        }
        return 0;
    });
}

}  // namespace rdmanet::cni::cli
