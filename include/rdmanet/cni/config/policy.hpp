#pragma once
// The node policy: what the node admin allows the network configurations (NAD authors) to use on
// this node, plus the protections that hold with or without a policy file.
//
// Whoever can create a NetworkAttachmentDefinition controls the JSON this plugin runs as root on
// every node. The policy file is the node admin's (root-owned, under the CNI config dir, written by
// `rdmanetctl install`); its location comes from the runtime's environment (RDMANET_POLICY_FILE,
// for tests) or the default, never from the network configuration.
//
// Policy file (JSON object; every key optional, unknown keys are an error so a typo cannot
// silently widen or narrow the policy):
//   version          1
//   modes            ["macvlan","hostdev",...]   allowed modes; absent = every mode
//   devices          what may be MOVED into a pod (hostdev, sriov VFs):
//     names          fnmatch globs on the host netdev name ("ib*", "enp3s0f*v*"); [] = any
//     pciAddresses   globs on the PCI address ("0000:af:*"); [] = any
//     vendorIds      PCI vendor ids, hex without 0x ("15b3"); [] = any
//     vfsOnly        true: only SR-IOV virtual functions (sysfs physfn present); default false
//   masters          what macvlan/IPoIB children may be created on:
//     names, pciAddresses, vendorIds    as for devices
//     allowUplink    children of the node's uplink (the default-route device); default true
//   logDir           where logFile / ipam.log_file must live; default /var/log/rdmanet
//   auditLog         file every refusal is appended to ("" = none); default <logDir>/policy.log
//   kubeconfigDirs   where ipam.kubernetes.kubeconfig may be read from; default ["/etc/cni/net.d"]
//   ipamConfigDirs   where ipam.configuration_path may be read from; default ["/etc/cni/net.d"]
//   ipamDataDirs     where ipam.data_dir may point; default ["/var/lib/cni/rdmanet"]
//   deviceInfoDirs   where runtimeConfig.CNIDeviceInfoFile may be written (and removed); default
//                    Multus' ["/var/run/k8s.cni.cncf.io/devinfo", "/run/k8s.cni.cncf.io/devinfo"]
//   stateDir         attachment state directory; default /var/lib/cni/rdmanet/state
//   sysctls          fnmatch globs on the "sysctl" keys a network may set, written with IFNAME
//                    ("net.ipv4.conf.IFNAME.arp_*"); absent = every per-interface key; [] = none.
//                    policyRouting's own defaults (arp_ignore, arp_announce, rp_filter) are not
//                    narrowed by it
// Every list entry of a *Dirs key and logDir/stateDir must be an absolute path without "..".
// Within devices/masters, each non-empty list is a condition that must hold (AND between lists,
// OR within one): names ["mlx*"] + vendorIds ["15b3"] means "named mlx* AND made by Mellanox".
//
// Built-in protections (no policy key turns them off):
//   - never move into a pod loopback, a device holding a default route (either family), the
//     lower device of one (a VLAN's parent, ...), nor a device holding a global-scope address of
//     the node (its primary addresses);
//   - never move a device the attachment state records as attached to another live pod;
//   - logFile, log_file, configuration_path, kubeconfig, data_dir, CNIDeviceInfoFile outside the
//     allowed directories -> code 7 naming the key and the allowed place; nothing opened or created;
//   - files we create are 0600, directories 0700, opened with O_NOFOLLOW below the allowed dir.
// Every refusal is logged (to the configured log, when allowed, and to auditLog) and explained
// in the error message; secrets (kubeconfig contents, tokens) never appear in either.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/ipam/core/config.hpp"

namespace rdmanet::cni {

inline constexpr std::string_view kPolicyFileEnv = "RDMANET_POLICY_FILE";
inline constexpr std::string_view kDefaultCniConfigDir = "/etc/cni/net.d";
inline constexpr std::string_view kDefaultPolicyFile = "/etc/cni/net.d/rdmanet.d/policy.json";
inline constexpr std::string_view kDefaultLogDir = "/var/log/rdmanet";
inline constexpr std::string_view kDefaultStateDir = "/var/lib/cni/rdmanet/state";
inline constexpr std::string_view kDefaultIpamDataRoot = "/var/lib/cni/rdmanet";
// Where Multus puts the device-info files it hands to delegates; /var/run is a
// symlink to /run on most distributions, and the runtime may spell it either way.
inline constexpr std::string_view kMultusDevInfoDir = "/var/run/k8s.cni.cncf.io/devinfo";
inline constexpr std::string_view kMultusDevInfoRunDir = "/run/k8s.cni.cncf.io/devinfo";

struct DeviceRules {
    std::vector<std::string> names;          // globs on netdev names; empty = any
    std::vector<std::string> pci_addresses;  // globs on PCI addresses; empty = any
    std::vector<std::string> vendor_ids;     // lower-case hex without 0x; empty = any
    bool vfs_only = false;                   // devices only
    bool allow_uplink = true;                // masters only
};

struct NodePolicy {
    std::string source;                             // the file it was read from; "" = built-in defaults
    std::optional<std::vector<std::string>> modes;  // nullopt = every mode
    DeviceRules devices;
    DeviceRules masters;
    std::string log_dir = std::string(kDefaultLogDir);
    std::string audit_log = std::string(kDefaultLogDir) + "/policy.log";
    std::vector<std::string> kubeconfig_dirs = {std::string(kDefaultCniConfigDir)};
    std::vector<std::string> ipam_config_dirs = {std::string(kDefaultCniConfigDir)};
    std::vector<std::string> ipam_data_dirs = {std::string(kDefaultIpamDataRoot)};
    std::vector<std::string> device_info_dirs = {std::string(kMultusDevInfoDir), std::string(kMultusDevInfoRunDir)};
    std::string state_dir = std::string(kDefaultStateDir);
    std::optional<std::vector<std::string>> sysctls;  // "sysctls": nullopt = every per-interface key

    // What the IPAM layer enforces on the ipam object's file keys.
    ipam::PathLimits ipam_limits() const;
};

// ---- loading ---------------------------------------------------------------------------------

// $RDMANET_POLICY_FILE when set and non-empty, else kDefaultPolicyFile.
std::string policy_file_path(const EnvLookup& lookup);
// The names of the modes the caller has (the plugin passes its registry's mode_names()): a
// policy naming any other mode is refused, so that a misspelt name is an error instead of an
// entry that silently matches nothing. Empty = not checked (rdmanet-ipam, which has no modes).
using KnownModes = std::span<const std::string_view>;

// Pure: parses the policy file's text. Throws Error(invalid_environment, ...) naming the file
// and the key for anything malformed (the NAD author cannot fix it: the message says so).
NodePolicy parse_node_policy(std::string_view text, const std::string& source, KnownModes known_modes);
// Reads policy_file_path(lookup): built-in defaults when the file does not exist; a file that
// exists but cannot be read or parsed throws (fail closed: ADD must not run unrestricted because
// the admin's file has a typo). The file is opened with O_NOFOLLOW on its last component only:
// it lives in the admin's directory.
NodePolicy load_node_policy(const EnvLookup& lookup, KnownModes known_modes);
// The same, but the built-in defaults when the file is broken: DEL/GC/STATUS use it so that
// teardown works even when the admin's file has a typo (ADD and CHECK fail closed instead).
NodePolicy load_node_policy_or_defaults(const EnvLookup& lookup, KnownModes known_modes);
// ADD and CHECK load strictly, every other verb falls back to the defaults.
NodePolicy load_node_policy_for(Command command, const EnvLookup& lookup, KnownModes known_modes);

// ---- rendering (rdmanetctl doctor / install) -------------------------------------------------

// The effective policy, every key with its value (defaults filled in: no "modes" = every one of
// `known_modes`), plus "source".
nlohmann::json policy_to_json(const NodePolicy& policy, KnownModes known_modes);
// The file `rdmanetctl install` writes: the defaults, spelled out, pretty-printed.
std::string default_policy_file_content(KnownModes known_modes);

}  // namespace rdmanet::cni
