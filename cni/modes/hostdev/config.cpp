// mode "hostdev": its configuration keys.
#include "rdmanet/cni/modes/hostdev/mode.hpp"
#include "rdmanet/cni/protocol/value_checks.hpp"

namespace rdmanet::cni {

namespace {

constexpr auto kInvalid = ErrorCode::invalid_config;

// PCI address or auxiliary id from one of the deviceID keys; nullopt when the key is absent or
// holds a device plugin index, which names no device.
std::optional<std::string> device_id(const JsonFields& f, std::string_view key,
                                     const std::optional<std::string>& value) {
    if (!value || value->empty() || checks::is_device_plugin_index(*value)) return std::nullopt;
    if (checks::is_pci_address(*value)) return checks::lowercase(*value);
    if (checks::is_auxiliary_device_id(*value)) return *value;
    f.invalid(key, text::quote(*value) +
                       " is neither a PCI address (like \"0000:af:06.0\") nor an auxiliary "
                       "device id (like \"mlx5_core.sf.4\")");
}

}  // namespace

std::unique_ptr<ModeSettings> parse_hostdev_conf(const ModeKeys& keys) {
    auto settings = std::make_unique<HostdevConf>();
    auto& hostdev = *settings;
    keys.attempt([&] { hostdev.device = interface_name(keys.top, "device").value_or(""); });
    keys.attempt([&] {
        auto hwaddr = keys.top.string("hwaddr");
        if (hwaddr && !checks::is_mac(*hwaddr))
            keys.top.invalid("hwaddr", text::quote(*hwaddr) +
                                           " is not a MAC address: write six hex octets such as "
                                           "\"0a:58:0a:01:00:05\"");
        hostdev.hwaddr = checks::lowercase(hwaddr.value_or(""));
    });
    keys.attempt([&] {
        auto path = keys.top.string("kernelpath").value_or("");
        if (!path.empty() && !checks::is_sys_devices_path(path))
            keys.top.invalid("kernelpath",
                             text::quote(path) + " must be an absolute path under /sys/devices/ without \"..\"");
        hostdev.kernelpath = path;
    });
    keys.attempt([&] {
        // Precedence runtimeConfig.deviceID > deviceID > pciBusID (Multus writes all three).
        // Only for naming the key in errors: the value was read by parse_runtime_config.
        std::optional<std::string> id = device_id(runtime_config_names(), "deviceID", keys.conf.runtime.device_id);
        if (!id) id = device_id(keys.top, "deviceID", keys.top.string("deviceID"));
        if (!id) id = device_id(keys.top, "pciBusID", keys.top.string("pciBusID"));
        hostdev.pci_address = id.value_or("");
    });
    if (keys.required && hostdev.device.empty() && hostdev.hwaddr.empty() && hostdev.kernelpath.empty() &&
        hostdev.pci_address.empty())
        throw Error(kInvalid,
                    "hostdev mode needs a device: set one of \"device\", \"hwaddr\", "
                    "\"kernelpath\" or \"pciBusID\", or let Multus pass deviceID from a device "
                    "plugin");
    return settings;
}

}  // namespace rdmanet::cni
