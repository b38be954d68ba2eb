#pragma once
// The network configuration's "rdma" object: whether the pod also gets the
// RDMA device of its interface, and the RoCE type of service its rdma_cm connections start with.
// Pure values; parsed by cni/config/rdma_section.cpp.
//
//   "rdma": { "isolation": "auto" | "required" | "off", "tos": 0-255 }
#include <optional>
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
std::string_view rdma_isolation_name(RdmaIsolation isolation);   // "auto" | "required" | "off"
std::optional<RdmaIsolation> parse_rdma_isolation(std::string_view name);

struct RdmaConf {
    RdmaIsolation isolation = RdmaIsolation::auto_;
    // rdma_cm's default_roce_tos for the device the pod owns, set after the move (which resets
    // it). nullopt = leave it; a device that is not moved (shared mode) keeps the node's value.
    std::optional<unsigned char> tos;
};

}  // namespace rdmanet::cni
