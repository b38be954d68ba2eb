#pragma once
// Result and DNS parsing with the caller's error code and path: the same reader serves an IPAM
// answer (decode failure, "result.ips[0]...") and a config's prevResult (invalid config,
// "prevResult.ips[0]...").
#include <string>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/protocol/result.hpp"

namespace rdmanet::cni {

Result parse_result_at(const nlohmann::json& j, std::string path, ErrorCode code);
Dns parse_dns_at(const nlohmann::json& j, std::string path, ErrorCode code);

}  // namespace rdmanet::cni
