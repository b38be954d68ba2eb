// RoCE v2 GIDs of the pod's addresses (roce_gids.hpp).
#include "rdmanet/cni/modes/rdma/roce_gids.hpp"

#include <cstdio>
#include <thread>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"
#include "rdmanet/cni/modes/sriov/sriov.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/netns/error.hpp"

namespace rdmanet::cni {

std::string roce_v2_gid(const base::IpAddress& address) {
    std::uint8_t bytes[16] = {};
    if (address.is_v4()) {
        bytes[10] = 0xff;
        bytes[11] = 0xff;
        for (int i = 0; i < 4; ++i) bytes[12 + i] = address.data()[i];
    } else {
        for (int i = 0; i < 16; ++i) bytes[i] = address.data()[i];
    }
    std::string out;
    char group[8];
    for (int i = 0; i < 16; i += 2) {
        std::snprintf(group, sizeof group, "%02x%02x", bytes[i], bytes[i + 1]);
        out += (i ? ":" : "") + std::string(group);
    }
    return out;
}

GidMatch match_roce_v2_gids(const std::vector<netns::RdmaGidEntry>& table,
                            const std::vector<base::IpAddress>& addresses) {
    GidMatch match;
    for (const auto& address : addresses) {
        const std::string gid = roce_v2_gid(address);
        const netns::RdmaGidEntry* best = nullptr;
        for (const auto& entry : table) {
            if (entry.type != kRoceV2 || entry.gid != gid) continue;
            if (!best || entry.port < best->port || (entry.port == best->port && entry.index < best->index))
                best = &entry;
        }
        if (best)
            match.found.push_back({address.str(), gid, best->port, best->index});
        else
            match.missing.push_back(address.str());
    }
    return match;
}

nlohmann::json roce_gids_to_json(const std::vector<RoceGid>& gids) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& g : gids)
        out.push_back({{"address", g.address}, {"gid", g.gid}, {"port", g.port}, {"index", g.index}});
    return out;
}

std::vector<RoceGid> roce_gids_from_json(const nlohmann::json& j) {
    std::vector<RoceGid> out;
    if (!j.is_array()) return out;
    for (const auto& e : j) {
        if (!e.is_object() || !e.contains("address") || !e["address"].is_string() || !e.contains("index") ||
            !e["index"].is_number_unsigned())
            continue;
        out.push_back(
            {e["address"].get<std::string>(), e.value("gid", ""), e.value("port", 1u), e["index"].get<unsigned>()});
    }
    return out;
}

std::vector<base::IpAddress> interface_addresses(const Result& result, int iface) {
    std::vector<base::IpAddress> out;
    for (const auto& ip : result.ips)
        if (!ip.interface || *ip.interface == iface) out.push_back(ip.address.address);
    return out;
}

namespace {

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
    return out;
}

netns::RdmaGidTable read_table(const RdmaAccess* rdma, const netns::NetNamespace& pod_ns, const std::string& device) {
    const RdmaAccess& access = rdma ? *rdma : kernel_rdma_access();
    const auto& read = access.gids_in ? access.gids_in : kernel_rdma_access().gids_in;
    try {
        return read(pod_ns, device);
    } catch (const netns::KernelError& e) {
        throw Error(ErrorCode::kernel_failure,
                    "cannot read the GID table of RDMA device " + device + " in the pod: " + e.what());
    }
}

}  // namespace

void roce_gids_add(const AddRequest& req, const std::vector<base::IpAddress>& addresses) {
    if (req.state.rdma_device.empty() || addresses.empty()) return;
    const std::string device = req.state.rdma_device_in_pod();
    const auto timeout = std::chrono::milliseconds(req.conf.rdma.gid_timeout_ms);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    GidMatch match;
    for (;;) {
        const auto table = read_table(req.kernel.services.rdma, *req.kernel.pod_ns, device);
        if (!table.exists) {
            spdlog::warn("RDMA device {} has no sysfs entry in the pod: its RoCE GIDs are not checked", device);
            return;
        }
        if (!table.roce) {
            spdlog::debug("RDMA device {} has no RoCE port: no IP-based GIDs to wait for", device);
            return;
        }
        match = match_roce_v2_gids(table.entries, addresses);
        if (match.missing.empty()) break;
        if (std::chrono::steady_clock::now() >= deadline)
            throw Error(ErrorCode::timeout,
                        "RDMA device " + device + " has no RoCE v2 GID for " + join(match.missing) + " after " +
                            std::to_string(timeout.count()) + " ms",
                        "the kernel adds a RoCE v2 GID for each address of the device's netdev; check that the "
                        "address is on the interface and not tentative (IPv6 DAD), that the device's port is up, "
                        "or raise rdma.gidTimeoutMs");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    req.state.roce_gids = roce_gids_to_json(match.found);
    req.save_state();
    for (const auto& g : match.found)
        spdlog::info("RDMA device {}: RoCE v2 GID of {} at port {} index {}", device, g.address, g.port, g.index);
    const auto& file = req.conf.runtime.device_info_file;
    if (file && !file->empty())
        add_rdma_to_device_info(req.policy.device_info_dirs, *file, device, req.state.roce_gids);
}

void roce_gids_check(const CheckRequest& req, const AttachmentState& state,
                     const std::vector<base::IpAddress>& expected) {
    if (state.rdma_device.empty()) return;
    const std::string device = state.rdma_device_in_pod();
    const RdmaAccess& access = req.kernel.services.rdma ? *req.kernel.services.rdma : kernel_rdma_access();
    if (!req.conf.rdma.device_name.empty()) {
        auto pod_nl = access.open_in(*req.kernel.pod_ns);
        if (!pod_nl->device_by_name(req.conf.rdma.device_name))
            throw Error(ErrorCode::invalid_config,
                        "RDMA device " + req.conf.rdma.device_name + " (rdma.deviceName) is not in the pod");
    }
    const auto recorded = roce_gids_from_json(state.roce_gids);
    if (recorded.empty()) return;  // ADD waited for none (no RoCE port, or an older ADD)
    const auto table = read_table(req.kernel.services.rdma, *req.kernel.pod_ns, device);
    const auto match = match_roce_v2_gids(table.entries, expected);
    if (!match.missing.empty())
        throw Error(ErrorCode::invalid_config,
                    "RDMA device " + device + " has no RoCE v2 GID for " + join(match.missing) + " any more");
    for (const auto& now : match.found)
        for (const auto& then : recorded)
            if (then.address == now.address && (then.port != now.port || then.index != now.index))
                throw Error(ErrorCode::invalid_config,
                            "the RoCE v2 GID of " + now.address + " on RDMA device " + device + " moved from port " +
                                std::to_string(then.port) + " index " + std::to_string(then.index) + " to port " +
                                std::to_string(now.port) + " index " + std::to_string(now.index));
}

}  // namespace rdmanet::cni
