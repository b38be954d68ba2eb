#pragma once
// The plugin's network configuration (stdin), typed, with defaults and clear errors. Pure: no I/O.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/cni/config/mode_settings.hpp"
#include "rdmanet/cni/config/pod_settings.hpp"
#include "rdmanet/cni/config/rdma_conf.hpp"
#include "rdmanet/cni/protocol/result.hpp"

namespace rdmanet::cni {

struct RuntimeConfig {
    std::optional<std::string> mac;
    std::vector<std::string> ips;
    std::optional<std::string> device_id;
    std::optional<std::string> infiniband_guid;
    std::optional<std::string> device_info_file;  // CNIDeviceInfoFile
};

struct IpamConf {
    std::string type;  // empty when the config has no ipam section
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
    // "mode" as written; "" when a lenient parse (DEL, GC, STATUS) found none or a bad one.
    std::string mode;
    // The mode's own keys, parsed by the mode (its registry entry): settings.get<SriovConf>().
    ModeSettingsHolder settings;
    RdmaConf rdma;    // "rdma": {"isolation": ...}
    PodSettings pod;  // policyRouting, sysctl, ipv6
    IpamConf ipam;
    Dns dns;
    RuntimeConfig runtime;
    std::vector<std::string> args_cni_ips;  // args.cni.ips
    std::optional<Result> prev_result;
    std::string log_file;            // logFile, "" = no log
    std::string log_level = "info";  // logLevel: trace|debug|info|warn|error|off
    // GC: cni.dev/valid-attachments (or legacy cni.dev/attachments); nullopt when absent,
    // which is different from an empty list (absent = do nothing destructive).
    std::optional<std::vector<AttachmentKey>> valid_attachments;
    nlohmann::json raw;  // the whole stdin object

    // runtimeConfig.mac > CNI_ARGS MAC= > the mode's own "mac" key; nullopt when none.
    // Lower-cased. Throws Error(invalid_environment) when the CNI_ARGS MAC it would use is not an
    // assignable MAC (the config's MACs are checked by parse_net_conf).
    std::optional<std::string> requested_mac(const CniArgs& args) const;
};

// Every key but "mode" and the mode's own: the common part of parse_net_conf
// (cni/modes/net_conf.hpp), which documents the errors and the strict/lenient rules.
NetConf parse_common_conf(std::string_view stdin_bytes, Command command);

// For the stand-alone IPAM plugin (rdmanet-ipam): the config is another plugin's, so
// only the keys every plugin shares (cniVersion, name, runtimeConfig, args, ipam, GC attachments) are read and
// the mode/device keys are ignored.
NetConf parse_ipam_plugin_conf(std::string_view stdin_bytes, Command command);

// The cniVersion to print in a VERSION reply or an error: stdin's cniVersion when it is a
// plausible version string (digits and dots), else kLatestVersion. Never throws.
std::string reply_version(std::string_view stdin_bytes);

}  // namespace rdmanet::cni
