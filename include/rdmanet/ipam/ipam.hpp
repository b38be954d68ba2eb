#pragma once
// The IPAM as the plugin calls it in-process (and the rdmanet-ipam binary around it): ADD, DEL,
// CHECK, GC over a Store. The result is plain data; the cni layer converts it to its Result.
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/core/store.hpp"

namespace rdmanet::ipam {

struct IpamRequest {
    IpamConfig config;
    std::string network;  // CNI network "name"
    std::string container_id;
    std::string ifname;
    std::string podref;  // make_podref(); never empty for add()
    // Static requests, as written: runtimeConfig.ips, args.cni.ips, CNI_ARGS IP= ("IP" or "IP/len").
    // One inside a range takes that address in that range's pool (instead of the lowest free one);
    // one inside no range is returned as-is without reservation (whereabouts' static addresses)
    // and then needs a prefix length.
    std::vector<std::string> static_ips;
    // What the store records as the allocation's network, the scope of a GC (CNI GC releases only
    // allocations recorded under its own network); "" = `network`. A DRA claim's allocations are
    // recorded under a name no CNI network can have, so a container runtime's GC never frees them.
    std::string recorded_network;
};

struct IpamIp {
    base::IpNetwork address;  // host bits kept, the range's prefix: 10.0.0.5/24
    std::optional<base::IpAddress> gateway;
    friend bool operator==(const IpamIp&, const IpamIp&) = default;
};

struct IpamResult {
    std::vector<IpamIp> ips;  // one per range in config order, then static addresses
    std::vector<Route> routes;
    Dns dns;
};

// "<namespace>/<name>" (whereabouts' podRef); the container id when either part is missing, so
// that stickiness and cleaners still have a key (dranet #103).
std::string make_podref(std::string_view pod_namespace, std::string_view pod_name, std::string_view container_id);

// Opens the configured datastore. `budget` bounds every call of the Kubernetes datastore (the
// verb's deadline: 60 s for ADD/CHECK, 30 s for DEL/GC); the local store has its own busy timeout.
std::unique_ptr<Store> open_store(const StoreConfig& config,
                                  std::chrono::milliseconds budget = std::chrono::milliseconds(60000));

// One address per range. If a later range fails, what this ADD took is released again.
IpamResult add(Store& store, const IpamRequest& request);
// Releases what (container_id, ifname) holds; succeeds when it holds nothing.
void del(Store& store, const IpamRequest& request);
// Throws IpamError(not_allocated) naming the range when the attachment holds no address in one of
// the configured ranges, or the address is held for another container.
void check(Store& store, const IpamRequest& request);
// Releases allocations of `network` whose attachment is not in `valid`; returns them.
std::vector<Allocation> gc(Store& store, const IpamConfig& config, std::string_view network,
                           std::span<const AttachmentId> valid);

// The same, opening the store from request.config.store.
IpamResult add(const IpamRequest& request);
void del(const IpamRequest& request);
void check(const IpamRequest& request);
std::vector<Allocation> gc(const IpamConfig& config, std::string_view network, std::span<const AttachmentId> valid);

// The pools of the configuration, in range order.
std::vector<PoolKey> pool_keys(const IpamConfig& config);

}  // namespace rdmanet::ipam
