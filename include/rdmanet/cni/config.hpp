#pragma once
// The plugin's network configuration (stdin), typed, with defaults and clear errors. Pure: no I/O.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/env.hpp"
#include "rdmanet/cni/result.hpp"

namespace rdmanet::cni {

enum class Mode { macvlan, hostdev };
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

    // runtimeConfig.mac > CNI_ARGS MAC= > mode-level mac; nullopt when none.
    std::optional<std::string> requested_mac(const CniArgs& args) const;
};

// Parses and validates stdin for `command`. Errors: decode failure (6) for malformed JSON or a
// key of the wrong JSON type, invalid config (7) for bad values (unknown mode, missing master or
// device, bad MAC, bad name), incompatible version (1) for an unsupported cniVersion or a verb the
// version does not have (CHECK < 0.4.0, GC/STATUS < 1.1.0). The message names the key and what to
// write instead. DEL is lenient: only cniVersion and name must be valid, so an attachment can
// always be torn down even if its config has since become invalid.
NetConf parse_net_conf(std::string_view stdin_bytes, Command command);

}  // namespace rdmanet::cni
