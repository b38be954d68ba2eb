#pragma once
// rdmanet's own IPAM (ipam/), called in-process: the bridge between CNI's view (config, env,
// Result, errors) and the IPAM library's plain types. Used by the plugin when ipam.type is
// "rdmanet-ipam" and by the stand-alone rdmanet-ipam plugin.
#include <vector>

#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/cni/protocol/result.hpp"

namespace rdmanet::cni {

// IPAM result shape (no interfaces). IpamError codes pass through as CNI error codes.
Result embedded_ipam_add(const NetConf& conf, const Environment& env, const NodePolicy& policy);
void embedded_ipam_del(const NetConf& conf, const Environment& env, const NodePolicy& policy);
void embedded_ipam_check(const NetConf& conf, const Environment& env, const NodePolicy& policy);
// Releases this network's allocations whose attachment is not in conf.valid_attachments
// (nothing when the key is absent).
void embedded_ipam_gc(const NetConf& conf, const Environment& env, const NodePolicy& policy);

}  // namespace rdmanet::cni
