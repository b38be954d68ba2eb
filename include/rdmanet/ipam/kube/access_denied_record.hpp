#pragma once
// The node's record of its credentials being refused: <slices dir>/access-denied.json, written
// when the API server answers a node-slice CNI call or the node agent with 401 or 403, removed
// when a request with the same credentials succeeds again. `rdmanetctl doctor` and the agent's
// metrics report it, so that a revoked or expired token never goes unnoticed on a node whose pods
// keep their addresses.
#include <cstdint>
#include <optional>
#include <string>

#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::ipam::kube {

struct AccessDeniedRecord {
    std::int64_t unix_time = 0;  // when it was last refused
    long http = 0;               // 401 or 403
    std::string message;         // the IPAM's message: the kubeconfig and the server's words
};

// Best effort (a node that cannot write its own data dir has louder problems): never throws.
void record_access_denied(const std::string& slices_dir, const AccessDenied& e);
void clear_access_denied(const std::string& slices_dir);
// std::nullopt when there is no record (or it is unreadable: then message says so).
std::optional<AccessDeniedRecord> read_access_denied(const std::string& slices_dir);

}  // namespace rdmanet::ipam::kube
