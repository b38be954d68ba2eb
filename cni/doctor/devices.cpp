// rdmanetctl devices: an ibdev2netdev/ibstat-like table from sysfs and libibverbs.
#include <algorithm>
#include <filesystem>
#include <map>
#include <ostream>
#include <tuple>

#include "rdmanet/cni/doctor/devices.hpp"
#include "rdmanet/netns/rdma_sysfs.hpp"

namespace rdmanet::cni::doctor {

namespace {

std::string function_kind(const netns::RdmaDeviceSysfs& dev) {
    if (dev.parent.empty()) return "-";  // software devices (rxe, siw) have no function
    if (dev.is_vf) return "VF";
    // Auxiliary devices (SFs) are named <driver>.<kind>.<n>, PCI functions DDDD:BB:DD.F.
    if (dev.parent.find(':') == std::string::npos) return "SF";
    return "PF";
}

// A software RDMA device (rxe, siw) has no parent of its own; over a netdev that is a PCI function
// (rxe on a VF's netdev) that function stands in, so the row still reads VF -> PF. "" when the
// port has no single netdev with a PCI device.
struct SoftParent {
    std::string pci, function;
};
SoftParent soft_parent(const netns::Sysfs& sysfs, const netns::RdmaPortSysfs& port) {
    namespace fs = std::filesystem;
    if (port.netdevs.size() != 1) return {};
    std::error_code ec;
    const fs::path root(sysfs.root());
    const auto device = fs::read_symlink(root / "class/net" / port.netdevs[0] / "device", ec);
    if (ec) return {};
    const std::string pci = device.filename().string();
    if (pci.find(':') == std::string::npos) return {};
    const auto pf = fs::read_symlink(root / "bus/pci/devices" / pci / "physfn", ec);
    if (ec) return {pci, "PF (soft)"};
    return {pci + " (PF " + pf.filename().string() + ")", "VF (soft)"};
}

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
    return out.empty() ? "-" : out;
}

}  // namespace

std::vector<DeviceRow> device_rows(const netns::Sysfs& sysfs, const std::vector<cli::VerbsPort>& verbs) {
    std::map<std::pair<std::string, unsigned>, const cli::VerbsPort*> by_port;
    for (const auto& v : verbs) by_port[{v.device, v.port}] = &v;

    std::vector<DeviceRow> rows;
    for (const auto& name : netns::rdma_devices(sysfs)) {
        auto dev = netns::read_rdma_device(sysfs, name);
        if (!dev) continue;
        std::string pci = dev->parent.empty() ? "-" : dev->parent;
        if (dev->is_vf) pci += " (PF " + dev->pf + ")";
        for (const auto& port : dev->ports) {
            DeviceRow row{name, port.state, port.link_layer, join(port.netdevs), pci, function_kind(*dev), port.port};
            if (dev->parent.empty()) {
                if (auto soft = soft_parent(sysfs, port); !soft.pci.empty()) {
                    row.pci = soft.pci;
                    row.function = soft.function;
                }
            }
            if (auto it = by_port.find({name, port.port}); it != by_port.end()) {
                row.state = it->second->state;
                row.link_layer = it->second->link_layer;
                by_port.erase(it);
            }
            rows.push_back(row);
        }
    }
    for (const auto& [key, v] : by_port)  // known to verbs only
        rows.push_back(DeviceRow{v->device, v->state, v->link_layer, "-", "-", "-", v->port});
    for (auto& row : rows) {
        if (row.state.empty()) row.state = "-";
        if (row.link_layer.empty()) row.link_layer = "-";
    }
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return std::tie(a.device, a.port) < std::tie(b.device, b.port); });
    return rows;
}

std::string format_device_table(const std::vector<DeviceRow>& rows) {
    const std::vector<std::string> header = {"DEVICE", "PORT", "STATE", "LINK_LAYER", "NETDEV", "PCI", "FUNCTION"};
    std::vector<std::vector<std::string>> cells = {header};
    for (const auto& r : rows)
        cells.push_back({r.device, std::to_string(r.port), r.state, r.link_layer, r.netdev, r.pci, r.function});
    std::vector<std::size_t> width(header.size(), 0);
    for (const auto& line : cells)
        for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
    std::string out;
    for (const auto& line : cells) {
        std::string text;
        for (std::size_t i = 0; i < line.size(); ++i) {
            text += line[i];
            if (i + 1 < line.size()) text += std::string(width[i] - line[i].size() + 2, ' ');
        }
        out += text + "\n";
    }
    return out;
}

int devices(const DevicesOptions& options, const std::function<std::vector<cli::VerbsPort>()>& verbs, std::ostream& out,
            std::ostream&) {
    const netns::Sysfs sysfs(options.sysfs_root);
    // libibverbs always reads the real /sys: mixing it with another root would mix two nodes.
    const bool use_verbs = options.verbs && options.sysfs_root == "/sys" && verbs;
    const auto rows = device_rows(sysfs, use_verbs ? verbs() : std::vector<cli::VerbsPort>{});
    if (rows.empty()) {
        out << "no RDMA devices on this node (none in " << options.sysfs_root << "/class/infiniband"
            << (use_verbs ? " nor from libibverbs" : "")
            << "): load the NIC's RDMA driver (mlx5_ib ...) or, for tests, add a soft-RoCE device:"
               " rdma link add rxe0 type rxe netdev <if>\n";
        return 0;
    }
    out << format_device_table(rows);
    return 0;
}

}  // namespace rdmanet::cni::doctor
