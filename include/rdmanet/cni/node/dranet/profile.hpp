#pragma once
// An admin's rdmanet profile for DRANET claims: the file DIR/<profile>.json,
//
//   {"network": "rail1",                       optional: the name the pools are named after
//    "ipam": {...rdmanet-ipam keys...},         every datastore of rdmanet-ipam
//    "policyRouting": true | {"table", "priority", "addSourceHints"},
//    "sysctl": {"net.ipv4.conf.IFNAME.arp_ignore": "1", "net.ipv4.conf.IFNAME.arp_announce": "2"},
//    "whereaboutsReconciler": "absent"}         optional: see whereabouts_hazard()
//
// read through the CNI path's own parsers (network configuration, ipam section, node policy), so a
// profile means what the same keys mean in a NetworkAttachmentDefinition.
#include <optional>
#include <string>
#include <string_view>

#include "rdmanet/cni/config/pod_settings.hpp"
#include "rdmanet/ipam/core/config.hpp"

namespace rdmanet::cni {
struct NodePolicy;
}

namespace rdmanet::cni::node::dranet {

struct Profile {
    std::string name;
    std::string network;  // "network", else the profile's name
    ipam::IpamConfig ipam;
    PodSettings pod;  // policyRouting and the two ARP sysctls
    std::optional<int> arp_ignore;
    std::optional<int> arp_announce;
    bool whereabouts_reconciler_absent = false;  // "whereaboutsReconciler": "absent"
};

// 1-253 of [A-Za-z0-9._-], not starting with '.': a name that can only ever be a file in DIR.
bool is_valid_profile_name(std::string_view name);

// Parses a profile's text. `strict` for GetProfileConfig; a release parses leniently (the IPAM's
// DEL rules) so that a profile that has become invalid can still release what it allocated.
// Throws ProviderError(400) saying what to fix.
Profile parse_profile(std::string_view name, std::string_view text, const NodePolicy& policy,
                      const std::string& node_name, bool strict);

// whereabouts' ip-reconciler (its whereabouts-reconciler Deployment, or the older CronJob) lists
// every IPPool of every namespace, node slices' pools included, and every
// OverlappingRangeIPReservation, and releases each entry whose podRef is not a live pod carrying
// that address in its network-status annotation; only an empty podRef is skipped. A claim's entry
// (podRef "dranet:<claim UID>") names no pod, so that reconciler frees it while the claim's pod uses
// the address. The message saying so when the profile keeps claims there (the "kubernetes"
// datastore without nv-ipam's poolName) and the admin has not stated that no such reconciler runs
// ("whereaboutsReconciler": "absent"); nullopt when the profile is safe. The local store and
// nv-ipam's pools are never visited by whereabouts.
std::optional<std::string> whereabouts_hazard(const Profile& profile);

// Reads DIR/<name>.json (at most 1 MiB, no symlink as the last component) and parses it.
// ProviderError(400) for an invalid name, (404) when the file does not exist.
Profile load_profile(const std::string& dir, std::string_view name, const NodePolicy& policy,
                     const std::string& node_name, bool strict);

}  // namespace rdmanet::cni::node::dranet
