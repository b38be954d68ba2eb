// RDMA devices in sysfs (the lookups of Mellanox/rdmamap; layout in rdma_sysfs.hpp).
#include "rdmanet/netns/rdma_sysfs.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace rdmanet::netns {
namespace fs = std::filesystem;

namespace {

// Identifiers come from configs and sysfs: one that could climb out of its directory names nothing.
bool safe(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

std::vector<std::string> entries(const fs::path& dir) { return sorted_entry_names(dir.string()); }

std::string read_attribute(const fs::path& path) {
    std::ifstream in(path);
    std::string line;
    if (in) std::getline(in, line);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    return line;
}

fs::path ib_class(const Sysfs& sysfs) { return fs::path(sysfs.root()) / "class/infiniband"; }

std::vector<std::string> port_netdevs(const fs::path& port_dir) {
    std::set<std::string> names;
    for (const auto& index : entries(port_dir / "gid_attrs/ndevs")) {
        // Unused GID slots read as EINVAL in real sysfs; an empty or failed read is skipped.
        auto name = read_attribute(port_dir / "gid_attrs/ndevs" / index);
        if (!name.empty()) names.insert(name);
    }
    return {names.begin(), names.end()};
}

}  // namespace

std::vector<std::string> pci_rdma_devices(const Sysfs& sysfs, const std::string& pci) {
    if (!safe(pci)) return {};
    return entries(fs::path(sysfs.root()) / "bus/pci/devices" / pci / "infiniband");
}

std::vector<std::string> aux_rdma_devices(const Sysfs& sysfs, const std::string& aux_id) {
    if (!safe(aux_id)) return {};
    return entries(fs::path(sysfs.root()) / "bus/auxiliary/devices" / aux_id / "infiniband");
}

std::vector<std::string> rdma_devices(const Sysfs& sysfs) { return entries(ib_class(sysfs)); }

std::vector<std::string> netdev_rdma_devices(const Sysfs& sysfs, const std::string& ifname) {
    if (!safe(ifname)) return {};
    std::set<std::string> found;
    for (const auto& dev : rdma_devices(sysfs))
        for (const auto& port : entries(ib_class(sysfs) / dev / "ports"))
            for (const auto& name : port_netdevs(ib_class(sysfs) / dev / "ports" / port))
                if (name == ifname) found.insert(dev);
    if (found.empty()) {
        // The netdev's parent device (a PCI function or an auxiliary SF) and its RDMA devices.
        const fs::path parent = fs::path(sysfs.root()) / "class/net" / ifname / "device";
        for (const auto& dev : entries(parent / "infiniband")) found.insert(dev);
    }
    return {found.begin(), found.end()};
}

std::optional<RdmaDeviceSysfs> read_rdma_device(const Sysfs& sysfs, const std::string& name) {
    if (!safe(name)) return std::nullopt;
    const fs::path dir = ib_class(sysfs) / name;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return std::nullopt;
    RdmaDeviceSysfs dev;
    dev.name = name;
    dev.node_guid = read_attribute(dir / "node_guid");
    if (auto parent = symlink_target_name(dir / "device")) {
        dev.parent = *parent;
        const fs::path pci = fs::path(sysfs.root()) / "bus/pci/devices" / *parent;
        if (auto pf = symlink_target_name(pci / "physfn")) {
            dev.is_vf = true;
            dev.pf = *pf;
        }
    }
    for (const auto& port : entries(dir / "ports")) {
        RdmaPortSysfs p;
        try {
            p.port = static_cast<unsigned>(std::stoul(port));
        } catch (const std::exception&) {
            continue;
        }
        // "4: ACTIVE" -> "ACTIVE"
        auto state = read_attribute(dir / "ports" / port / "state");
        if (auto colon = state.find(": "); colon != std::string::npos) state = state.substr(colon + 2);
        p.state = state;
        p.link_layer = read_attribute(dir / "ports" / port / "link_layer");
        p.netdevs = port_netdevs(dir / "ports" / port);
        dev.ports.push_back(std::move(p));
    }
    std::sort(dev.ports.begin(), dev.ports.end(), [](const auto& a, const auto& b) { return a.port < b.port; });
    return dev;
}

bool rdma_device_bound_to_netdev(const Sysfs& sysfs, const std::string& name) {
    if (!safe(name)) return false;
    const fs::path dir = ib_class(sysfs) / name;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return false;
    return !fs::exists(fs::symlink_status(dir / "device", ec));
}

}  // namespace rdmanet::netns
