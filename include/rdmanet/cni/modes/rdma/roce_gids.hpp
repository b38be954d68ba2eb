#pragma once
// RoCE v2 GIDs of the pod's addresses on the RDMA device the pod owns (exclusive RDMA netns
// mode). RoCE v2 resolves a peer through the IP stack and addresses a local port by GID index:
// the kernel adds one RoCE v2 GID per address of the device's netdev (IPv4 a.b.c.d as
// ::ffff:a.b.c.d, IPv6 as itself), asynchronously after the address appears. ADD therefore
// returns only when every pod address has its GID, and reports the indexes (device-info file),
// so that NCCL_IB_GID_INDEX / rdma_cm users know them; CHECK verifies they are still there.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/base/ip.hpp"
#include "rdmanet/cni/modes/backend.hpp"
#include "rdmanet/cni/protocol/result.hpp"
#include "rdmanet/netns/rdma_gids.hpp"

namespace rdmanet::cni {

struct RdmaAccess;

// ---- pure --------------------------------------------------------------------------------

inline constexpr const char* kRoceV2 = "RoCE v2";

// The RoCE v2 GID of `address` as sysfs prints it ("0000:0000:0000:0000:0000:ffff:c0a8:6401").
std::string roce_v2_gid(const base::IpAddress& address);

struct RoceGid {
    std::string address;  // the pod address, without prefix
    std::string gid;      // sysfs form
    unsigned port = 0;
    unsigned index = 0;
    friend bool operator==(const RoceGid&, const RoceGid&) = default;
};

struct GidMatch {
    std::vector<RoceGid> found;        // in the order of `addresses`
    std::vector<std::string> missing;  // addresses without a RoCE v2 entry yet
};
// For each address, the lowest (port, index) RoCE v2 entry carrying its GID.
GidMatch match_roce_v2_gids(const std::vector<netns::RdmaGidEntry>& table,
                            const std::vector<base::IpAddress>& addresses);

// [{"address", "gid", "port", "index"}] and back (entries that do not parse are skipped).
nlohmann::json roce_gids_to_json(const std::vector<RoceGid>& gids);
std::vector<RoceGid> roce_gids_from_json(const nlohmann::json& j);

// The addresses of `result` applied to interface `iface` (or to none in particular).
std::vector<base::IpAddress> interface_addresses(const Result& result, int iface);

// ---- effects -----------------------------------------------------------------------------

// ADD, after the pod's addresses are configured: when req.state names an RDMA device the pod
// owns (moved in by rdma_isolation_add) and its ports are RoCE, waits up to
// conf.rdma.gid_timeout_ms for the RoCE v2 GID of every address, records them in
// req.state.roce_gids and adds them, with the device's pod name, to the device-info file when
// the runtime asked for one. Throws Error timeout (104) naming the missing addresses.
void roce_gids_add(const AddRequest& req, const std::vector<base::IpAddress>& addresses);

// CHECK: every address in `expected` still has its RoCE v2 GID at the index ADD reported, and
// the device has the name rdma.deviceName asked for. Throws Error otherwise.
void roce_gids_check(const CheckRequest& req, const AttachmentState& state,
                     const std::vector<base::IpAddress>& expected);

}  // namespace rdmanet::cni
