#pragma once
// Migration from NVIDIA's nv-ipam: a network's {"type":"nv-ipam","poolName":...} IPAM together
// with nv-ipam's IPPool (nv-ipam.nvidia.com/v1alpha1) becomes rdmanet-ipam on the Kubernetes
// datastore with per-node slices, the same addresses handed out per node block. Pure.
//
// nv-ipam IPPool spec -> rdmanet-ipam:
//   subnet             -> range
//   perNodeBlockSize   -> node_slice_size: the smallest prefix whose slice holds that many
//                         addresses (nv-ipam blocks need not be powers of two; a slice never
//                         holds fewer addresses than the block did)
//   gateway            -> gateway
//   exclusions         -> exclude, each [startIP, endIP] as the fewest CIDRs covering exactly it
//   defaultGateway     -> a default route (0.0.0.0/0 or ::/0) through the gateway
//   routes[{dst}]      -> routes
//   poolName           -> network_name (the NodeSlicePool and the slice IPPools are named after it)
// Refused, with what to do: a CIDRPool (poolType "cidrpool"), two pools in one poolName, and
// perNodeExclusions (rdmanet has no per-slice exclusions). nodeSelector is not carried: a NAD
// applies wherever its pods are scheduled.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace rdmanet::cni::translate {

inline constexpr const char* kNvIpamApi = "nv-ipam.nvidia.com/v1alpha1";

// `network` names the network (poolName defaults to it, as in nv-ipam); `pools` holds the
// IPPool documents given with -f, by metadata.name. Throws std::runtime_error saying what to fix.
nlohmann::json convert_nv_ipam(const nlohmann::json& nv_ipam, const std::string& network,
                               const std::map<std::string, nlohmann::json>& pools, const std::string& kubeconfig);

}  // namespace rdmanet::cni::translate
