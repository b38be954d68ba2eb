// SR-IOV VF discovery through sysfs under the configurable root. The VF is
// always found from its PCI address, never from a cached netdev name: a VF left behind by a
// dead pod may carry "net1" or "dev<N>" (the kernel returns it under its pod name, or dev<N>).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "rdmanet/cni/modes/sriov/sriov.hpp"

namespace rdmanet::cni {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> entries(const fs::path& dir) { return netns::sorted_entry_names(dir.string()); }

std::optional<std::string> link_target_name(const fs::path& link) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(link, ec);
    if (ec) return std::nullopt;
    std::string name = target.lexically_normal().filename().string();
    if (name.empty()) return std::nullopt;
    return name;
}

fs::path pci_dir(const netns::Sysfs& sysfs, const std::string& pci) {
    return fs::path(sysfs.root()) / "bus/pci/devices" / pci;
}

// virtfn<N> -> N, or nullopt for any other name.
std::optional<unsigned> virtfn_index(std::string_view name) {
    constexpr std::string_view prefix = "virtfn";
    if (!name.starts_with(prefix) || name.size() == prefix.size() || name.size() > prefix.size() + 5)
        return std::nullopt;
    unsigned n = 0;
    for (char c : name.substr(prefix.size())) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + static_cast<unsigned>(c - '0');
    }
    return n;
}

bool pf_is_infiniband(const netns::Sysfs& sysfs, const std::string& pf) {
    std::ifstream in(fs::path(sysfs.root()) / "class/net" / pf / "type");
    int type = 0;
    return in >> type && type == 32;  // ARPHRD_INFINIBAND
}

}  // namespace

bool is_userspace_driver(const std::string& driver) {
    return driver == "vfio-pci" || driver == "uio_pci_generic" || driver == "igb_uio";
}

std::optional<std::string> vf_netdev(const netns::Sysfs& sysfs, const std::string& pci) {
    auto names = sysfs.pci_netdevs(pci);
    if (names.empty()) return std::nullopt;
    return names.front();
}

std::string pci_vendor_id(const netns::Sysfs& sysfs, const std::string& pci) {
    if (!sysfs.pci_device_exists(pci)) return "";
    std::ifstream in(pci_dir(sysfs, pci) / "vendor");
    std::string text;
    if (!(in >> text)) return "";
    if (text.starts_with("0x")) text = text.substr(2);
    return text;
}

Error missing_netdev_error(const VfDevice& vf) {
    return Error(ErrorCode::device_not_found,
                 "VF " + vf.pci + (vf.driver.empty() ? " is bound to no driver" : " (driver " + vf.driver + ")") +
                     " has no network interface in the host",
                 "it may be attached to another pod, or need a kernel or userspace (vfio-pci) driver");
}

VfDevice find_vf(const netns::Sysfs& sysfs, const std::string& pci, bool require_netdev) {
    if (!sysfs.pci_device_exists(pci))
        throw Error(ErrorCode::device_not_found, "PCI device " + pci + " does not exist on this node",
                    "check deviceID/pciBusID and the SR-IOV device plugin's resource");
    const fs::path dev = pci_dir(sysfs, pci);
    VfDevice vf;
    vf.pci = pci;
    auto pf_pci = link_target_name(dev / "physfn");
    if (!pf_pci)
        throw Error(ErrorCode::invalid_config, "PCI device " + pci + " is not an SR-IOV virtual function (no physfn)",
                    "use mode \"hostdev\" for a physical function or another whole device");
    vf.pf_pci = *pf_pci;

    bool found = false;
    for (const auto& name : entries(dev / "physfn")) {
        auto index = virtfn_index(name);
        if (index && link_target_name(dev / "physfn" / name) == pci) {
            vf.index = *index;
            found = true;
            break;
        }
    }
    if (!found)
        throw Error(ErrorCode::device_not_found,
                    "VF " + pci + " is not listed among the virtfn links of its PF " + vf.pf_pci,
                    "the VFs may be being re-created; retry");

    auto pf_netdevs = entries(dev / "physfn" / "net");
    if (pf_netdevs.empty())
        throw Error(ErrorCode::device_not_found, "the PF " + vf.pf_pci + " of VF " + pci + " has no network interface",
                    "after a reboot the PF netdev appears once the VFs are re-created (sriov-cni #178)");
    vf.pf = pf_netdevs.front();
    vf.infiniband = pf_is_infiniband(sysfs, vf.pf);

    vf.driver = sysfs.pci_driver(pci).value_or("");
    vf.userspace = is_userspace_driver(vf.driver);
    if (!vf.userspace) {
        vf.netdev = vf_netdev(sysfs, pci);
        if (!vf.netdev && require_netdev) throw missing_netdev_error(vf);
    }
    return vf;
}

}  // namespace rdmanet::cni
