#pragma once
// Executes another CNI plugin (a delegated IPAM) per the spec: found in CNI_PATH, same env with
// CNI_COMMAND replaced, the network config on stdin, bounded by a timeout.
#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/protocol/env.hpp"

namespace rdmanet::cni {

// Returns the plugin's parsed stdout (null when it printed nothing, as DEL/CHECK may).
// Throws Error: the plugin's own CNI error (code/msg/details passed through) when it exits
// non-zero with an error JSON; ipam_failure naming the plugin and its stderr otherwise, and also
// when it exits 0 with output that is not JSON (bounded: depth, 4 MiB);
// invalid_config when `type` is not a plain file name or is not found in CNI_PATH;
// timeout (the child is killed) when it runs longer than `timeout`.
nlohmann::json exec_plugin(const std::string& type, Command command, const Environment& env,
                           const nlohmann::json& config, std::chrono::milliseconds timeout);

}  // namespace rdmanet::cni
