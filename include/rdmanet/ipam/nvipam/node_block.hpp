#pragma once
// The node's block or subnet of each nv-ipam pool, kept in a file beside the local store, and the
// network's IPAM configuration made from it. With the node's block known, ADD and DEL make no API
// request: addresses are allocated in the node's local SQLite store (<data_dir>/nvipam), and DEL
// releases there (it needs no block at all).
//
// Files: <data_dir>/nvipam/blocks/<pooltype>.<namespace>.<pool>.json =
//   {"node", "object" (the pool as last read), "source" ("nv-ipam" | "rdmanet"), "read_at" (unix s)}
// Re-read policy: a cached block is used as it is while younger than kRefreshAfter; the node
// agent re-reads every cached pool on each pass (refresh_node_blocks), so a node with an agent
// never re-reads on the ADD path. An ADD that finds its copy older re-reads the pool within
// kRereadBudget and, when the API server does not answer, keeps serving from the copy (an
// outage does not stop a node that knows its block). Without a copy the pool is read and, when
// status has no entry for the node, a block is claimed (pool_api.hpp) within kub::kClaimBudget.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"
#include "rdmanet/ipam/nvipam/pool_api.hpp"

namespace rdmanet::ipam::nvipam {

inline constexpr std::chrono::seconds kRefreshAfter{600};
inline constexpr std::chrono::milliseconds kRereadBudget{2000};

struct NodeBlock {
    PoolRef ref;
    std::string node;
    Pool pool;
    NodeAllocation allocation;
    std::string source;        // "nv-ipam" (the controller's, or any writer but this node) | "rdmanet"
    std::int64_t read_at = 0;  // unix seconds of the last successful read
};

std::string local_store_dir(const std::string& data_dir);  // <data_dir>/nvipam
std::string blocks_dir(const std::string& data_dir);       // <data_dir>/nvipam/blocks

// The cached blocks of this data directory (unreadable files skipped).
std::vector<NodeBlock> cached_blocks(const std::string& data_dir);

// The node's block of `ref`: from the cache while fresh, else read (and claimed when needed) and
// cached. `kubeconfig` is loaded only when the API is needed.
NodeBlock node_block(const PoolRef& ref, const std::string& node, const std::string& data_dir,
                     const std::function<kube::KubeConfig()>& kubeconfig, std::int64_t now,
                     std::chrono::seconds max_age = kRefreshAfter);

// The network's IPAM configuration with one range per pool (the node's block), its gateway and
// routes: what ipam::add hands to the local store. Pools from config.nv.
IpamConfig resolved_config(const IpamConfig& config, std::string_view network);

// The node agent's pass: re-reads every cached pool (one GET each) and updates the cache; a node
// whose entry vanished claims again. Returns one line per change or failure.
std::vector<std::string> refresh_node_blocks(const kube::KubeConfig& kubeconfig, const std::string& data_dir,
                                             std::chrono::milliseconds budget);

}  // namespace rdmanet::ipam::nvipam
