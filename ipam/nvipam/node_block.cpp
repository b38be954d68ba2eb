// The node's cached blocks of nv-ipam pools: see node_block.hpp.
#include "rdmanet/ipam/nvipam/node_block.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rdmanet/base/atomic_file.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/node_identity.hpp"
#include "rdmanet/base/json_limits.hpp"

namespace rdmanet::ipam::nvipam {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string file_of(const std::string& data_dir, const PoolRef& ref) {
    return blocks_dir(data_dir) + "/" + std::string(ref.type == PoolType::ippool ? "ippool" : "cidrpool") + "." +
           ref.ns + "." + ref.name + ".json";
}

std::optional<NodeBlock> read_block_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    const json j = base::parse_json_limited(text.str()).value;  // a refused text reads as no cache
    if (!j.is_object() || !j.contains("object") || !j.contains("node")) return std::nullopt;
    try {
        NodeBlock b;
        b.ref.type = j.value("type", "ippool") == "cidrpool" ? PoolType::cidrpool : PoolType::ippool;
        b.pool = parse_pool(j["object"], b.ref.type);
        b.ref.ns = b.pool.ns;
        b.ref.name = b.pool.name;
        b.node = j.value("node", "");
        b.source = j.value("source", "nv-ipam");
        b.read_at = j.value("read_at", std::int64_t{0});
        const NodeAllocation* mine = b.pool.allocation_of(b.node);
        if (!mine || !valid_allocation(b.pool, *mine)) return std::nullopt;
        b.allocation = *mine;
        return b;
    } catch (const std::exception&) {
        return std::nullopt;  // a pool that no longer parses is read again
    }
}

void write_block_file(const std::string& data_dir, const NodeBlock& b, const json& object) {
    std::error_code ec;
    fs::create_directories(blocks_dir(data_dir), ec);
    const json j = {{"type", b.ref.type == PoolType::ippool ? "ippool" : "cidrpool"},
                    {"node", b.node},
                    {"object", object},
                    {"source", b.source},
                    {"read_at", b.read_at}};
    try {
        base::write_file_atomically(file_of(data_dir, b.ref), j.dump());
    } catch (const std::exception& e) {
        throw IpamError(codes::io_failure, "writing the node's block of " + b.pool.where() + ": " + e.what());
    }
}

// Reads (claiming when needed) and caches. `previous`: the cached copy, whose source carries over
// while the allocation stays the same.
NodeBlock fetch(kube::KubeApi& api, const PoolRef& ref, const std::string& node, const std::string& data_dir,
                std::int64_t now, const std::optional<NodeBlock>& previous) {
    const Claimed c = claim_allocation(api, ref, node);
    NodeBlock b{ref, node, c.pool, c.allocation, c.written_here ? "rdmanet" : "nv-ipam", now};
    if (!c.written_here && previous && previous->allocation == c.allocation) b.source = previous->source;
    write_block_file(data_dir, b, c.object);
    return b;
}

// An API server that does not answer (or fails) is an outage the cached block rides out; one that
// refuses this node's credentials (401) or permissions (403) is not: that holds until an admin
// fixes them, and serving from the cache would hide it until the cache is all that is left.
bool outage(const IpamError& e) {
    if (dynamic_cast<const AccessDenied*>(&e)) return false;
    return e.code == codes::try_again || e.code == codes::io_failure;
}

}  // namespace

std::string local_store_dir(const std::string& data_dir) { return data_dir + "/nvipam"; }
std::string blocks_dir(const std::string& data_dir) { return data_dir + "/nvipam/blocks"; }

std::vector<NodeBlock> cached_blocks(const std::string& data_dir) {
    std::vector<NodeBlock> out;
    std::error_code ec;
    for (fs::directory_iterator it(blocks_dir(data_dir), ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().extension() != ".json") continue;
        if (auto b = read_block_file(it->path().string())) out.push_back(std::move(*b));
    }
    std::sort(out.begin(), out.end(),
              [](const NodeBlock& a, const NodeBlock& b) { return a.pool.where() < b.pool.where(); });
    return out;
}

NodeBlock node_block(const PoolRef& ref, const std::string& node, const std::string& data_dir,
                     const std::function<kube::KubeConfig()>& kubeconfig, std::int64_t now,
                     std::chrono::seconds max_age) {
    std::optional<NodeBlock> cached = read_block_file(file_of(data_dir, ref));
    if (cached && cached->node != node) cached.reset();
    if (cached && now - cached->read_at < max_age.count()) return std::move(*cached);
    // A stale copy is re-read within a short budget and kept when the API server does not answer;
    // without one the claim may take its full budget.
    kube::KubeApi api(kubeconfig(), kube::Deadline::in(cached ? kRereadBudget : std::chrono::milliseconds(8000)));
    try {
        return fetch(api, ref, node, data_dir, now, cached);
    } catch (const IpamError& e) {
        if (cached && outage(e) && e.msg.rfind("no ", 0) != 0) return std::move(*cached);
        throw;
    }
}

IpamConfig resolved_config(const IpamConfig& config, std::string_view network) {
    IpamConfig out = config;
    const NvPoolKeys& nv = config.nv;
    std::vector<std::string> names = nv.pools;
    if (names.empty()) names.push_back(std::string(network));  // nv-ipam's default: the network's name
    const PoolRef proto{nv.type == "cidrpool" ? PoolType::cidrpool : PoolType::ippool,
                        nv.ns.empty() ? std::string(kDefaultNamespace) : nv.ns, ""};
    const std::string node = kube::resolve_node_name(config.store.nodename, config.store.node_config_dir);
    const StoreConfig& store = config.store;
    auto load = [&store] { return kube::load_store_kubeconfig(store); };
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    out.ranges.clear();
    out.routes.clear();
    out.enable_overlapping_ranges = false;  // one node's blocks of distinct pools never overlap
    out.network_name = "nvipam." + std::string(nv.type) + "." + proto.ns;
    for (const auto& name : names) {
        PoolRef ref = proto;
        ref.name = name;
        const NodeBlock b = node_block(ref, node, store.data_dir, load, now);
        Range r = node_range(b.pool, b.allocation);
        for (const auto& prev : out.ranges)
            if (prev.cidr.address.family() == r.cidr.address.family())
                config_error("ipam.poolName: " + prev.field + " and " + r.field +
                             " are of one address family: name one IPv4 and one IPv6 pool");
        for (const auto& route : node_routes(b.pool, b.allocation)) out.routes.push_back(route);
        out.ranges.push_back(std::move(r));
    }
    for (const auto& route : config.routes) out.routes.push_back(route);
    return out;
}

std::vector<std::string> refresh_node_blocks(const kube::KubeConfig& kubeconfig, const std::string& data_dir,
                                             std::chrono::milliseconds budget) {
    std::vector<std::string> report;
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (const NodeBlock& cached : cached_blocks(data_dir)) {
        kube::KubeApi api(kubeconfig, kube::Deadline::in(budget));
        try {
            const NodeBlock fresh = fetch(api, cached.ref, cached.node, data_dir, now, cached);
            if (!(fresh.allocation == cached.allocation))
                report.push_back(cached.pool.where() + ": node " + cached.node + " now holds " +
                                 (fresh.ref.type == PoolType::ippool
                                      ? fresh.allocation.start.str() + "-" + fresh.allocation.end.str()
                                      : fresh.allocation.prefix.str()));
        } catch (const IpamError& e) {
            report.push_back(cached.pool.where() + ": not re-read: " + e.msg);
        }
    }
    return report;
}

}  // namespace rdmanet::ipam::nvipam
