#pragma once
// The network configuration's keys for the pod side of the interface: source-based policy
// routing, per-interface sysctls and IPv6 duplicate address detection. Pure values and checks;
// parsed by cni/config/pod_section.cpp, applied by cni/pod/.
//
//   "policyRouting": true | {"table": N, "priority": P, "addSourceHints": bool}
//   "sysctl": {"net.ipv4.conf.IFNAME.arp_ignore": "1", ...}
//   "ipv6": {"dad": bool}
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rdmanet::cni {

// Rule priorities a policyRouting rule may take: after the local table's rule (0) and before
// the main table's (32766), else the rule would hide local delivery or never be reached.
inline constexpr unsigned kMinRulePriority = 1;
inline constexpr unsigned kMaxRulePriority = 32765;
// Where the search for a free table starts when "table" is not given (the reference sbr plugin's).
inline constexpr unsigned kFirstAutoTable = 100;

struct PolicyRouting {
    std::optional<unsigned> table;     // nullopt = the first free one from kFirstAutoTable up
    std::optional<unsigned> priority;  // nullopt = the kernel's choice (below the lowest rule)
    bool add_source_hints = false;     // routes carry this attachment's address as source hint
};

// One "sysctl" entry, checked: the key names a per-interface setting of the pod-side interface.
struct SysctlEntry {
    std::string key;    // as written ("net.ipv4.conf.IFNAME.arp_ignore")
    std::string tree;   // "net.ipv4.conf", "net.ipv4.neigh", "net.ipv6.conf" or "net.ipv6.neigh"
    std::string iface;  // "IFNAME" or the literal interface name the key was written with
    std::string leaf;   // "arp_ignore"
    std::string value;  // "1"
};

struct PodSettings {
    std::optional<PolicyRouting> policy_routing;
    std::vector<SysctlEntry> sysctl;  // in the order written
    // ipv6.dad: nullopt = the default (skip DAD for the embedded IPAM's addresses, which are
    // unique by construction; run it for any other IPAM's).
    std::optional<bool> ipv6_dad;
};

// Splits "net.ipv4.conf.<iface>.<leaf>" (or the same with '/') into its parts; nullopt with a
// reason in `why` for anything else: another tree, an empty or unsafe part ("..", '/', a leaf
// with characters other than [a-z0-9_-]).
std::optional<SysctlEntry> parse_sysctl_key(std::string_view key, std::string& why);
// A value the kernel can take for these keys: 1-256 printable characters without '/' or control
// characters (numbers, "4096 87380", MAC-like text).
bool is_valid_sysctl_value(std::string_view value);
// The /proc/sys-relative path of `entry` for the interface `ifname` ("net/ipv4/conf/net1/arp_ignore").
std::string sysctl_path(const SysctlEntry& entry, const std::string& ifname);
// The dotted key with IFNAME replaced by `ifname` ("net.ipv4.conf.net1.arp_ignore").
std::string sysctl_key_for(const SysctlEntry& entry, const std::string& ifname);

}  // namespace rdmanet::cni
