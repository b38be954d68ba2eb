#pragma once
// sysfs reads through a configurable root, so tests can build a fake PCI/VF tree.
// Identifiers come from configs: one that could leave its directory ("..", "/") finds nothing.
#include <filesystem>
#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace rdmanet::netns {

class Sysfs {
public:
    explicit Sysfs(std::string root = "/sys") : root_(std::move(root)) {}
    const std::string& root() const { return root_; }

    bool pci_device_exists(const std::string& pci) const;  // bus/pci/devices/<pci>
    bool aux_device_exists(const std::string& id) const;   // bus/auxiliary/devices/<id>
    // Netdev names of a PCI function: bus/pci/devices/<pci>/net/* then .../virtio*/net/*, sorted.
    std::vector<std::string> pci_netdevs(const std::string& pci) const;
    std::vector<std::string> aux_netdevs(const std::string& id) const;
    // Entries of <kernelpath>/net (kernelpath is absolute under /sys/devices, re-rooted);
    // empty for any other path.
    std::vector<std::string> kernelpath_netdevs(const std::string& kernelpath) const;
    // basename of bus/pci/devices/<pci>/driver, nullopt when unbound.
    std::optional<std::string> pci_driver(const std::string& pci) const;
    // PCI address of a netdev: basename of class/net/<ifname>/device (for virtio-net, of its
    // parent); nullopt for virtual links and for non-PCI parents (auxiliary SFs).
    std::optional<std::string> netdev_pci_address(const std::string& ifname) const;

private:
    std::string root_;
};

// Writes /proc/sys/<key> (key like "net/ipv4/conf/net1/arp_notify") in the CURRENT netns.
// Throws KernelError: EINVAL for a key with "", "." or ".." components or a leading '/',
// else the errno of open/write (ENOENT for an unknown key or interface).
void write_sysctl(const std::string& key, const std::string& value);
// Reads /proc/sys/<key> in the CURRENT netns, without the trailing newline; same key rules.
std::string read_sysctl(const std::string& key);

// The entry names of directory `dir`, sorted (sysfs lists them in no fixed order); empty when it
// does not exist or cannot be read.
std::vector<std::string> sorted_entry_names(const std::string& dir);

// Basename of a symlink's target (sysfs links such as driver or device); nullopt if `link` is
// not a symlink.
std::optional<std::string> symlink_target_name(const std::filesystem::path& link);

}  // namespace rdmanet::netns
