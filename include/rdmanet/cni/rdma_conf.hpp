#pragma once
// The network configuration's "rdma" object (REFERENCE.md §4.3-4.4): whether the pod also gets the
// RDMA device of its interface. Pure values; parsed by config_rdma.cpp.
//
//   "rdma": { "isolation": "auto" | "required" | "off" }
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
};

}  // namespace rdmanet::cni
