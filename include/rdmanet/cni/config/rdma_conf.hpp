#pragma once
// The network configuration's "rdma" object: whether the pod also gets the
// RDMA device of its interface, and the RoCE type of service its rdma_cm connections start with.
// Pure values; parsed by cni/config/rdma_section.cpp.
//
//   "rdma": { "isolation": "auto" | "required" | "off", "tos": 0-255,
//             "deviceName": "<name>", "gidTimeoutMs": 0-60000 }
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace rdmanet::cni {

enum class RdmaIsolation {
    // Default: in exclusive RDMA netns mode, move the function's RDMA device into the pod; in
    // shared mode (or with no RDMA device) leave it, the pod sees the host's devices anyway.
    auto_,
    // ADD fails unless the pod ends up owning the RDMA device (exclusive mode, movable device).
    required,
    // Never touch RDMA devices.
    off,
};
std::string_view rdma_isolation_name(RdmaIsolation isolation);  // "auto" | "required" | "off"
std::optional<RdmaIsolation> parse_rdma_isolation(std::string_view name);

struct RdmaConf {
    RdmaIsolation isolation = RdmaIsolation::auto_;
    // rdma_cm's default_roce_tos for the device the pod owns, set after the move (which resets
    // it). nullopt = leave it; a device that is not moved (shared mode) keeps the node's value.
    std::optional<unsigned char> tos;
    // The name the RDMA device gets inside the pod (exclusive mode, device owned by the pod), so
    // that NCCL_IB_HCA is the same in every pod; "" = keep the host's name. DEL renames it back
    // before it goes home.
    std::string device_name;
    // How long ADD waits for the RoCE v2 GID of each pod address to appear in the GID table of
    // the RDMA device the pod owns.
    unsigned gid_timeout_ms = 5000;
};

// The kernel's limit for RDMA device names (IB_DEVICE_NAME_MAX, with the NUL).
inline constexpr std::size_t kRdmaDeviceNameMax = 64;
// Why `name` cannot be an RDMA device name, "" when it can: 1..63 characters of [A-Za-z0-9_.-],
// not "." or "..". A '%' would make the kernel pick a number (mlx5_%d), '/' and whitespace break
// sysfs paths and tools.
std::string rdma_device_name_problem(std::string_view name);

}  // namespace rdmanet::cni
