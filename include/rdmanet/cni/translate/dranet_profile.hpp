#pragma once
// A rendered NetworkAttachmentDefinition as a profile of rdmanet's DRANET profile provider
// (`rdmanetctl render -o profile`): the network's name, its rdmanet-ipam section, policyRouting
// and the ARP sysctls, so that a network moved from Multus to DRANET keeps its pools (same
// network name, same ranges) and its per-rail routing. Pure.
#include <nlohmann/json.hpp>

namespace rdmanet::cni::translate {

// Throws std::runtime_error saying what to fix: a NAD whose rdmanet plugin has no rdmanet-ipam
// section (render with --ipam rdmanet), or a sysctl DRANET cannot apply.
nlohmann::json dranet_profile_of(const nlohmann::json& nad);

}  // namespace rdmanet::cni::translate
