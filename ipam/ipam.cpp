// ADD, DEL, CHECK, GC over a Store: the in-process IPAM the plugin calls.
#include "rdmanet/ipam/ipam.hpp"

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/kube_store.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"
#include "rdmanet/ipam/core/static_ips.hpp"
#include "rdmanet/ipam/kube/node_identity.hpp"
#include "rdmanet/ipam/kube/slice_store.hpp"
#include "rdmanet/ipam/nvipam/node_block.hpp"

namespace rdmanet::ipam {

namespace {

void require_attachment(const IpamRequest& request) {
    if (request.container_id.empty()) config_error("ipam: container id is empty");
    if (request.ifname.empty()) config_error("ipam: interface name is empty");
}

std::string podref_of(const IpamRequest& request) {
    return request.podref.empty() ? request.container_id : request.podref;
}

}  // namespace

std::string make_podref(std::string_view pod_namespace, std::string_view pod_name, std::string_view container_id) {
    if (pod_namespace.empty() || pod_name.empty()) return std::string(container_id);
    return std::string(pod_namespace) + "/" + std::string(pod_name);
}

std::vector<PoolKey> pool_keys(const IpamConfig& config) {
    std::vector<PoolKey> keys;
    for (const auto& r : config.ranges) keys.push_back(PoolKey{config.network_name, r.cidr});
    return keys;
}

std::unique_ptr<Store> open_store(const StoreConfig& config, std::chrono::milliseconds budget) {
    switch (config.datastore) {
    case Datastore::local: return std::make_unique<SqliteStore>(config.data_dir);
    case Datastore::kubernetes: {
        // The deadline starts now: loading the kubeconfig is part of the verb's budget too.
        const auto deadline = kube::Deadline::in(budget);
        auto kubeconfig = kube::load_store_kubeconfig(config);
        if (config.node_slice_prefix) {
            if (config.slice_pool_name.empty()) {
                config_error(
                    "node_slice_size needs a name for the NodeSlicePool: set ipam.network_name (or the "
                    "network's name)");
            }
            return std::make_unique<kube::SliceStore>(
                std::move(kubeconfig), deadline, config.data_dir,
                kube::SliceSettings{config.slice_pool_name,
                                    kube::resolve_node_name(config.nodename, config.node_config_dir),
                                    *config.node_slice_prefix, config.defer_slice_publication});
        }
        return std::make_unique<kube::KubeStore>(std::move(kubeconfig), deadline, config.data_dir + "/kubernetes");
    }
    }
    throw IpamError(codes::invalid_config, "ipam.datastore: unknown datastore");
}

IpamResult add(Store& store, const IpamRequest& request) {
    require_attachment(request);
    const IpamConfig& config = request.config;
    const StaticPlan plan = plan_static_ips(config, request.static_ips);
    const Owner owner{request.container_id, podref_of(request), request.ifname};

    IpamResult result;
    std::vector<PoolKey> touched;
    // All or nothing: a dual-stack ADD that got its IPv4 address but not its IPv6 one gives the
    // first back (including one it re-used: the failed ADD's DEL would release it anyway). The
    // range that failed took back its own write (Store::allocate); it is released as well, for an
    // address it re-used, unless the store did not answer (code 11: the API server failing, a
    // busy lock): that release would only wait out the same failure again (and record it for the
    // node agent), and the failed ADD's DEL releases a re-used address anyway.
    auto give_back = [&](bool including_failed) {
        if (!including_failed && !touched.empty()) touched.pop_back();
        try {
            store.release(touched, AttachmentId{request.container_id, request.ifname});
        } catch (...) {
            // The original error is the one to report; GC reclaims what this could not release.
        }
    };
    try {
        for (std::size_t i = 0; i < config.ranges.size(); ++i) {
            const Range& range = config.ranges[i];
            AllocateRequest ar{range,
                               config.network_name,
                               config.enable_overlapping_ranges,
                               owner,
                               request.recorded_network.empty() ? request.network : request.recorded_network,
                               plan.per_range[i]};
            touched.push_back(ar.pool());
            const Allocation a = store.allocate(ar);
            result.ips.push_back({base::IpNetwork{a.ip, range.cidr.prefix}, range.gateway});
        }
    } catch (const IpamError& e) {
        give_back(e.code != codes::try_again);
        throw;
    } catch (...) {
        give_back(true);
        throw;
    }
    for (const auto& net : plan.passthrough) result.ips.push_back({net, std::nullopt});
    for (const auto& sa : config.addresses) result.ips.push_back({sa.address, sa.gateway});
    result.routes = config.routes;
    result.dns = config.dns;
    return result;
}

void del(Store& store, const IpamRequest& request) {
    if (request.container_id.empty() || request.ifname.empty()) return;  // nothing can be held under it
    store.release(pool_keys(request.config), AttachmentId{request.container_id, request.ifname});
}

void check(Store& store, const IpamRequest& request) {
    require_attachment(request);
    const std::string podref = podref_of(request);
    for (const auto& range : request.config.ranges) {
        const PoolKey key{request.config.network_name, range.cidr};
        auto a = store.find(key, podref, request.ifname);
        if (!a) {
            throw IpamError(codes::not_allocated, "ipam CHECK: " + podref + " " + request.ifname +
                                                      " holds no address in " + range.field + " " + range.cidr.str());
        }
        if (a->owner.container_id != request.container_id) {
            throw IpamError(codes::not_allocated, "ipam CHECK: " + a->ip.str() + " in " + range.cidr.str() +
                                                      " is held for container " + a->owner.container_id + ", not " +
                                                      request.container_id);
        }
    }
}

std::vector<Allocation> gc(Store& store, const IpamConfig& config, std::string_view network,
                           std::span<const AttachmentId> valid) {
    return store.gc(network, pool_keys(config), valid);
}

namespace {

// The one choice of the store a verb works on. nv-ipam's pools are served by the node's local
// store (no API request once the blocks are known, nvipam/node_block.hpp); otherwise the
// configuration's datastore, with what only the verb knows: the NodeSlicePool's name.
std::unique_ptr<Store> store_for(const IpamConfig& config, std::string_view network, std::chrono::milliseconds budget) {
    if (config.nv.enabled) return std::make_unique<SqliteStore>(nvipam::local_store_dir(config.store.data_dir));
    StoreConfig store = config.store;
    store.slice_pool_name = config.network_name.empty() ? std::string(network) : config.network_name;
    return open_store(store, budget);
}

// ADD and CHECK read the ranges: an nv-ipam configuration has none until the node's blocks make
// them (resolved before the store opens). DEL and GC need no block: with no ranges, the store
// releases by attachment in every pool.
IpamRequest with_ranges(const IpamRequest& request) {
    if (!request.config.nv.enabled) return request;
    IpamRequest resolved = request;
    resolved.config = nvipam::resolved_config(request.config, request.network);
    return resolved;
}

}  // namespace

IpamResult add(const IpamRequest& request) {
    const IpamRequest resolved = with_ranges(request);
    const auto store = store_for(request.config, request.network, kube::kAddBudget);
    return add(*store, resolved);
}

void del(const IpamRequest& request) {
    const auto store = store_for(request.config, request.network, kube::kDelBudget);
    del(*store, request);
}

void check(const IpamRequest& request) {
    const IpamRequest resolved = with_ranges(request);
    const auto store = store_for(request.config, request.network, kube::kAddBudget);  // as long as ADD may take
    check(*store, resolved);
}

std::vector<Allocation> gc(const IpamConfig& config, std::string_view network, std::span<const AttachmentId> valid) {
    const auto store = store_for(config, network, kube::kDelBudget);
    return gc(*store, config, network, valid);
}

}  // namespace rdmanet::ipam
