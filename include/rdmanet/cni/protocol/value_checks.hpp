#pragma once
// Value checks for network configuration keys: hardware addresses, device ids, paths. Pure.
#include <string>
#include <string_view>

namespace rdmanet::cni::checks {

// Six hex octets separated by ':' (either case), e.g. "0a:58:0a:01:00:05".
bool is_mac(std::string_view text);
// A MAC the kernel accepts as an interface address: not multicast, not all zeros.
bool is_assignable_mac(std::string_view text);
// Eight hex octets separated by ':' (InfiniBand GUID).
bool is_guid(std::string_view text);
// ^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$
bool is_pci_address(std::string_view text);
// An auxiliary bus device name such as "mlx5_core.sf.4": <module>.<name>.<id>, charset
// [A-Za-z0-9_.-], starting with a letter, at most 255 characters (a sysfs name).
bool is_auxiliary_device_id(std::string_view text);
// Decimal index as handed out by the RDMA shared device plugin ("0".."N-1"): not a device.
bool is_device_plugin_index(std::string_view text);
// Absolute, no ".." component, no control characters.
bool is_safe_absolute_path(std::string_view text);
// kernelpath: a safe absolute path under /sys/devices/.
bool is_sys_devices_path(std::string_view text);
// A plugin binary name: non-empty, no '/', not "." or "..", no control characters.
bool is_plain_file_name(std::string_view text);

std::string lowercase(std::string_view text);

}  // namespace rdmanet::cni::checks
