#pragma once
// The IPAM step of the plugin: rdmanet's own IPAM in-process when ipam.type is "rdmanet-ipam",
// otherwise the named IPAM plugin exec'd from CNI_PATH per the spec.
#include <chrono>

#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/cni/protocol/result.hpp"

namespace rdmanet::cni {

inline constexpr std::string_view kEmbeddedIpamType = "rdmanet-ipam";
inline constexpr auto kIpamAddTimeout = std::chrono::seconds(60);
inline constexpr auto kIpamDelTimeout = std::chrono::seconds(30);

bool has_ipam(const NetConf& conf);
// IPAM result shape (no interfaces). Empty result when the config has no IPAM.
Result ipam_add(const NetConf& conf, const Environment& env, const NodePolicy& policy);
// Routes that ADD could not install as the result lists them, or CHECK not find (see
// base::routes_problem): code 7. Called after the allocation is on the rollback stack.
void require_installable_routes(const NetConf& conf, const Result& result);
void ipam_del(const NetConf& conf, const Environment& env, const NodePolicy& policy);
void ipam_check(const NetConf& conf, const Environment& env, const NodePolicy& policy);
void ipam_gc(const NetConf& conf, const Environment& env, const NodePolicy& policy);
void ipam_status(const NetConf& conf, const Environment& env);

}  // namespace rdmanet::cni
