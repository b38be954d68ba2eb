#pragma once
// The whereabouts-style `ipam` object, typed and validated. Parsing and the flat-file merge are
// pure; only read_flat_file touches the file system.
//
// Keys (whereabouts v0.9.4 names, so existing NAD ipam blocks work after changing `type`):
//   range                    "10.0.0.0/24" or "10.0.0.10-10.0.0.20/24" (start-end/prefix)
//   range_start, range_end   inside the range's CIDR, start <= end      (else code 7, see below)
//   exclude                  CIDRs or bare IPs; host bits of a CIDR are cleared (whereabouts' real
//                            effect: "10.0.0.5/30" excludes .4-.7, not the .5-.7 its README claims)
//   ipRanges                 [{range, range_start, range_end, exclude}], one address per entry;
//                            the top-level range is prepended as entry 0 (dual-stack = two entries)
//   gateway                  returned with the addresses of the ranges of its family; never handed out
//   routes, dns              copied to the result
//   addresses                [{address, gateway}] static addresses returned as-is (whereabouts)
//   network_name             separates pools of the same CIDR; prefixes pool names
//   enable_overlapping_ranges  default true: an address is unique across all pools of one
//                            network_name, not only within its pool
//   log_file, log_level      for the caller's logger
//   datastore                "local" (default, SQLite under data_dir) | "kubernetes" (accepted
//                            here, refused when the store is opened until it exists)
//   kubernetes.kubeconfig    for the kubernetes datastore
//   data_dir                 local store directory, default /var/lib/cni/rdmanet/ipam
//   configuration_path       a whereabouts flat file (JSON) whose keys fill those the NAD leaves
//                            unset. Unlike whereabouts, no default flat-file locations are searched
//                            (they would pull a whereabouts install's "datastore":"kubernetes" in)
//                            and none is required.
//   node_slice_size          "/26" or "26" (kubernetes datastore): per-node address slices of that
//                            prefix length instead of one IPPool per range (node_slice_size.hpp)
// Accepted and ignored: type, leader_*, reconciler_cron_expression,
// sleep_for_race, kubernetes.k8s_api_root, etcd_* (whereabouts dropped etcd in v0.6).
//
// Deliberate differences from whereabouts: a range_start/range_end outside the CIDR, or
// start > end, is a configuration error (code 7) instead of being silently ignored; a top-level
// `exclude` is validated at load time; network, broadcast and gateway are never handed out.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/core/range.hpp"
#include "rdmanet/base/ip.hpp"
#include "rdmanet/base/route.hpp"

namespace rdmanet::ipam {

namespace kube {
struct KubeConfig;  // rdmanet/ipam/kube/kubeconfig.hpp
}

inline constexpr std::string_view kDefaultDataDir = "/var/lib/cni/rdmanet/ipam";
inline constexpr std::string_view kDefaultNodeConfigDir = "/etc/cni/net.d/rdmanet.d";

// The result's routes and DNS settings, copied from the config (the plugin's model: base/route.hpp).
using Route = base::Route;
using Dns = base::Dns;

struct StaticAddress {
    base::IpNetwork address;  // with host bits: "10.1.0.5/24"
    std::optional<base::IpAddress> gateway;
};

enum class Datastore { local, kubernetes };

struct StoreConfig {
    Datastore datastore = Datastore::local;
    std::string data_dir = std::string(kDefaultDataDir);
    std::string kubeconfig;
    // Set by load_ipam_config under an enforced node policy (the policy's kubeconfigDirs): the
    // kubeconfig and every file it names (CA, token, client certificate/key) are then read with
    // read_confined below one of these directories (confined_file.hpp), so a NAD cannot point the
    // plugin at the kubelet's credentials through a kubeconfig it controls. Empty = unconfined.
    std::vector<std::string> kubeconfig_dirs;
    std::function<void(const std::string& message)> on_refusal;  // the audit log, as in PathLimits
    // The caller's own Kubernetes access, used only when `kubeconfig` is empty: rdmanetctl
    // dranet-provider's --kubeconfig/--in-cluster for profiles that name no kubeconfig. Called
    // once per verb, so a rotated service-account token is read again. Never set from a
    // configuration; empty = the kubernetes datastore requires `kubeconfig`.
    std::function<kube::KubeConfig()> default_kube;
    // node_slice_size's prefix length: node-slice mode of the kubernetes datastore when set.
    std::optional<int> node_slice_prefix;
    // Where a `nodename` file names this node when $NODENAME is unset: the directory of
    // configuration_path when set, else kDefaultNodeConfigDir (the installer writes it there).
    std::string node_config_dir = std::string(kDefaultNodeConfigDir);
    // $NODENAME from the caller's environment (nullopt = unset); not read from the configuration.
    std::optional<std::string> nodename;
    // The NodeSlicePool's name: network_name, else the CNI network's name (set by the caller
    // that knows the network, ipam.cpp).
    std::string slice_pool_name;
    // Node-slice mode: commit each allocation and release in the node's local store with its
    // backlog marker and leave publication to the node agent's publish_pending (its interval),
    // so that a verb in the steady state makes no API request. Set by rdmanetctl dranet-provider
    // for every profile; never from a configuration, and never on the CNI path (a pod's entry is
    // published by its own ADD there).
    bool defer_slice_publication = false;
};

// nv-ipam's CNI keys (rdmanet/ipam/nvipam/node_block.hpp): with poolName or poolType set, the
// addresses come from the node's block of nv-ipam IPPools or CIDRPools instead of ranges.
//   poolName       "pool1" or "pool-v4,pool-v6" (at most two); default: the network's name
//   poolType       "ippool" (default) | "cidrpool"
//   poolNamespace  the pools' namespace (rdmanet's key; default nv-ipam's, kube-system)
struct NvPoolKeys {
    bool enabled = false;
    std::vector<std::string> pools;
    std::string type = "ippool";
    std::string ns;
};

struct IpamConfig {
    std::string type;
    NvPoolKeys nv;
    std::vector<Range> ranges;  // ranges[i].field names its origin
    std::optional<base::IpAddress> gateway;
    std::vector<Route> routes;
    Dns dns;
    std::vector<StaticAddress> addresses;
    std::string network_name;
    bool enable_overlapping_ranges = true;
    std::string log_file;
    std::string log_level;
    std::string configuration_path;
    StoreConfig store;
};

enum class Strictness {
    strict,   // ADD, CHECK: every error is fatal
    lenient,  // DEL, GC: a range entry that no longer parses is dropped, so that teardown works
              // with a config that has become invalid (the local store releases by attachment)
};

// Where the ipam object's file keys may point: the node policy, filled in by the cni layer
// (rdmanet::cni::NodePolicy::ipam_limits()). Not enforced by default (library callers, unit tests).
// The keys and the place each may point are one table (kPathKeys, ipam/core/config.cpp):
// configuration_path in config_dirs (read with open_confined, no symlink below the dir),
// kubernetes.kubeconfig in kubeconfig_dirs, data_dir in data_dirs (the default is always allowed),
// log_file in log_dir; load_ipam_config checks them before any file is opened. A refusal is
// IpamError(invalid_config) naming the key and the place; `on_refusal` (optional) is told first.
struct PathLimits {
    bool enforced = false;
    std::vector<std::string> config_dirs;
    std::vector<std::string> kubeconfig_dirs;
    std::vector<std::string> data_dirs;
    std::string log_dir;
    std::function<void(const std::string& message)> on_refusal;
};

// Throws IpamError(invalid_config) naming the field, e.g.
//   ipam.ipRanges[1].range_start "10.0.0.300" is not an IP address
IpamConfig parse_ipam_config(const nlohmann::json& ipam, Strictness strictness = Strictness::strict);

// whereabouts' merge: every key the flat file sets and the NAD leaves unset (absent or null) is
// copied, one level deep for the `kubernetes` object. enable_overlapping_ranges is never taken
// from the flat file (whereabouts cannot either), nor configuration_path (in the flat file it
// names a directory, not a file).
nlohmann::json merge_flat_file(const nlohmann::json& nad_ipam, const nlohmann::json& flat);

// Reads and parses a flat file. Throws IpamError(invalid_config) naming the path when unreadable or not a JSON
// object. With `confined_to` set, the file is opened with open_confined below that directory.
nlohmann::json read_flat_file(const std::string& path, const std::string& confined_to = "");

// Throws IpamError(invalid_config) when a file key of `ipam` (merged) lies outside `limits` (no-op unless
// limits.enforced). Used by load_ipam_config; exposed for callers that read keys themselves.
void check_path_limits(const nlohmann::json& ipam, const PathLimits& limits);

// read_flat_file + merge_flat_file when configuration_path is set, then parse_ipam_config.
IpamConfig load_ipam_config(const nlohmann::json& ipam, Strictness strictness = Strictness::strict,
                            const PathLimits& limits = {});

}  // namespace rdmanet::ipam
