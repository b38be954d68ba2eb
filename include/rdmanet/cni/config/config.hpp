#pragma once
// The plugin's network configuration (stdin), typed, with defaults and clear errors. Pure: no I/O.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/cni/config/rdma_conf.hpp"
#include "rdmanet/cni/protocol/result.hpp"

namespace rdmanet::cni {

enum class Mode { macvlan, hostdev, sriov, ipoib };
std::string_view mode_name(Mode mode);

struct RuntimeConfig {
    std::optional<std::string> mac;
    std::vector<std::string> ips;
    std::optional<std::string> device_id;
    std::optional<std::string> infiniband_guid;
    std::optional<std::string> device_info_file;   // CNIDeviceInfoFile
};

struct MacvlanConf {
    std::string master;                    // required on ADD/CHECK
    std::string mode = "bridge";           // macvlanMode: bridge|private|vepa|passthru
    unsigned mtu = 0;                      // 0 = master's
    std::optional<std::string> mac;        // config-level MAC (lowest precedence)
};

struct HostdevConf {
    std::string device;                    // netdev name
    std::string hwaddr;                    // MAC of the device
    std::string kernelpath;                // absolute, under /sys/devices/
    // PCI address (or auxiliary id) after precedence: runtimeConfig.deviceID > deviceID > pciBusID.
    std::string pci_address;
};

// mode "sriov": an SR-IOV VF by PCI address, its PF-side settings applied and restored
// (as sriov-cni and ib-sriov-cni do). Optional settings are nullopt when the config does not set them: only
// those are applied on ADD and reset on DEL, except the VLAN, which is always applied (0 when
// unset) so that a VF left tagged by an earlier pod is cleaned, as sriov-cni does.
struct SriovConf {
    // PCI address after precedence runtimeConfig.deviceID > deviceID > pciBusID.
    std::string pci_address;
    std::optional<std::string> mac;          // admin + effective MAC of the VF
    unsigned vlan = 0;                       // 0-4094, 0 = no VLAN
    unsigned vlan_qos = 0;                   // 0-7, needs vlan != 0
    std::string vlan_proto = "802.1q";       // 802.1q | 802.1ad (the latter needs vlan != 0)
    bool vlan_set = false;                   // any of vlan/vlanQoS/vlanProto given
    std::optional<bool> spoofchk;            // "on" | "off"
    std::optional<bool> trust;               // "on" | "off"
    std::optional<std::string> link_state;   // auto | enable | disable
    std::optional<unsigned> min_tx_rate;     // Mbps
    std::optional<unsigned> max_tx_rate;     // Mbps, 0 = no limit; >= min_tx_rate
    std::optional<std::string> guid;         // InfiniBand GUID from the config (lowest precedence)
    std::optional<std::string> args_guid;    // args.cni.guid (the CNI "args" convention)
    std::optional<unsigned> pkey;            // InfiniBand partition key, recorded only
    unsigned mtu = 0;                        // 0 = leave the VF's MTU

    // runtimeConfig.infinibandGUID > args.cni.guid > CNI_ARGS GUID > guid; nullopt when none.
    // Lower-case. ib-sriov-cni reads runtimeConfig.infinibandGUID > args.cni.guid; CNI_ARGS and
    // the config key rank below, as the CNI conventions rank runtimeConfig > args > CNI_ARGS.
    // Throws Error(invalid_environment) for a CNI_ARGS GUID
    // that is not a usable GUID (the config's, args.cni's included, are checked by parse_net_conf).
    std::optional<std::string> requested_guid(const RuntimeConfig& runtime, const CniArgs& args) const;
};

// mode "ipoib": a child of an InfiniBand parent, created as ipoib-cni creates it.
struct IpoibConf {
    std::string master;                    // required on ADD/CHECK: the IPoIB parent netdev
    std::optional<unsigned> pkey;          // 1..0xffff except 0x8000; nullopt = the parent's
    std::optional<std::string> mode;       // ipoibMode: datagram|connected; nullopt = the parent's
    unsigned mtu = 0;                      // 0 = the parent's; never above it
};

struct IpamConf {
    std::string type;                      // empty when the config has no ipam section
    nlohmann::json raw = nlohmann::json::object();
};

struct AttachmentKey {
    std::string container_id;
    std::string ifname;
    friend bool operator==(const AttachmentKey&, const AttachmentKey&) = default;
};

struct NetConf {
    std::string cni_version;
    std::string name;
    std::string type;
    Mode mode = Mode::macvlan;
    MacvlanConf macvlan;
    HostdevConf hostdev;
    SriovConf sriov;
    IpoibConf ipoib;
    RdmaConf rdma;                                       // "rdma": {"isolation": ...}
    IpamConf ipam;
    Dns dns;
    RuntimeConfig runtime;
    std::vector<std::string> args_cni_ips;               // args.cni.ips
    std::optional<Result> prev_result;
    std::string log_file;                                // logFile, "" = no log
    std::string log_level = "info";                      // logLevel: trace|debug|info|warn|error|off
    // GC: cni.dev/valid-attachments (or legacy cni.dev/attachments); nullopt when absent,
    // which is different from an empty list (absent = do nothing destructive).
    std::optional<std::vector<AttachmentKey>> valid_attachments;
    nlohmann::json raw;                                  // the whole stdin object

    // runtimeConfig.mac > CNI_ARGS MAC= > mode-level mac (macvlan's `mac`); nullopt when none.
    // Lower-cased. Throws Error(invalid_environment) when the CNI_ARGS MAC it would use is not an
    // assignable MAC (the config's MACs are checked by parse_net_conf).
    std::optional<std::string> requested_mac(const CniArgs& args) const;
};

// Parses and validates stdin for `command`. Errors: decode failure (6) for JSON that does not
// parse (or nests too deep) or is not an object; invalid config (7) for a known key of the wrong
// JSON type or with a bad value (unknown mode, missing master or device, bad MAC, bad name,
// CHECK without prevResult); incompatible version (1) for a missing or unsupported cniVersion or
// a verb the version does not have (CHECK < 0.4.0, GC/STATUS < 1.1.0). The message names the key
// and what to write instead. Unknown keys are ignored (Multus and libcni inject some).
// Only ADD and CHECK are strict. DEL, GC, STATUS (and VERSION/none, should a caller pass them)
// are lenient: only cniVersion and name must be valid and every other key is best effort (a bad
// one keeps its default, a missing/bad mode leaves Mode::macvlan), so an attachment can always be
// torn down even if its config has since become invalid. GC alone still rejects a malformed
// cni.dev/valid-attachments, because guessing there could release live attachments.
// Normalised on the way in: MACs, GUIDs and PCI addresses are lower-cased; a plain decimal
// deviceID (the RDMA shared device plugin's "0".."N-1") is not a device and is skipped.
NetConf parse_net_conf(std::string_view stdin_bytes, Command command);

// The same for the stand-alone IPAM plugin (rdmanet-ipam): the config is another plugin's, so
// only the common keys (cniVersion, name, runtimeConfig, args, ipam, GC attachments) are read and
// the mode/device keys are ignored.
NetConf parse_ipam_plugin_conf(std::string_view stdin_bytes, Command command);

// The cniVersion to print in a VERSION reply or an error: stdin's cniVersion when it is a
// plausible version string (digits and dots), else kLatestVersion. Never throws.
std::string reply_version(std::string_view stdin_bytes);

}  // namespace rdmanet::cni
