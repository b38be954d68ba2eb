#include "fake_rdma_sysfs.hpp"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace rdmanet::test {
namespace fs = std::filesystem;

namespace {
void write(const fs::path& path, const std::string& content) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content << "\n";
}
fs::path hidden(const std::string& root, const std::string& name) { return fs::path(root) / ".hidden" / name; }
}  // namespace

FakeRdmaSysfs::FakeRdmaSysfs() {
    std::string tmpl = (fs::temp_directory_path() / "rdmanet-rdma-sysfs-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
}

FakeRdmaSysfs::~FakeRdmaSysfs() {
    std::error_code ec;
    fs::remove_all(root_, ec);
}

void FakeRdmaSysfs::add_pci_function(const std::string& pci, const std::string& pf) {
    const fs::path dir = fs::path(root_) / "bus/pci/devices" / pci;
    fs::create_directories(dir);
    if (!pf.empty()) fs::create_directory_symlink("../" + pf, dir / "physfn");
}

void FakeRdmaSysfs::add_aux_device(const std::string& id) {
    fs::create_directories(fs::path(root_) / "bus/auxiliary/devices" / id);
}

void FakeRdmaSysfs::add_rdma_device(const std::string& name, const std::string& parent,
                                    const std::vector<FakeRdmaPort>& ports, const std::string& node_guid) {
    const fs::path dir = fs::path(root_) / "class/infiniband" / name;
    fs::create_directories(dir);
    write(dir / "node_guid", node_guid);
    for (const auto& p : ports) {
        const fs::path port = dir / "ports" / std::to_string(p.port);
        write(port / "state", p.state);
        write(port / "link_layer", p.link_layer);
        fs::create_directories(port / "gid_attrs/ndevs");
        for (std::size_t i = 0; i < p.netdevs.size(); ++i)
            write(port / "gid_attrs/ndevs" / std::to_string(i), p.netdevs[i]);
    }
    if (parent.empty()) return;
    const bool pci = parent.find(':') != std::string::npos;
    const fs::path parent_dir = fs::path(root_) / (pci ? "bus/pci/devices" : "bus/auxiliary/devices") / parent;
    fs::create_directories(parent_dir / "infiniband" / name);
    fs::create_directory_symlink(parent_dir, dir / "device");
}

void FakeRdmaSysfs::hide_rdma_device(const std::string& name) {
    fs::create_directories(fs::path(root_) / ".hidden");
    fs::rename(fs::path(root_) / "class/infiniband" / name, hidden(root_, name));
    for (const char* bus : {"bus/pci/devices", "bus/auxiliary/devices"}) {
        std::error_code ec;
        for (fs::directory_iterator it(fs::path(root_) / bus, ec), end; !ec && it != end; it.increment(ec)) {
            const auto ib = it->path() / "infiniband" / name;
            if (fs::exists(ib)) fs::rename(ib, hidden(root_, name + ".parent-" + it->path().filename().string()));
        }
    }
}

void FakeRdmaSysfs::show_rdma_device(const std::string& name) {
    fs::rename(hidden(root_, name), fs::path(root_) / "class/infiniband" / name);
    std::error_code ec;
    for (fs::directory_iterator it(fs::path(root_) / ".hidden", ec), end; !ec && it != end; it.increment(ec)) {
        const std::string entry = it->path().filename().string();
        const std::string prefix = name + ".parent-";
        if (entry.rfind(prefix, 0) != 0) continue;
        const std::string parent = entry.substr(prefix.size());
        const bool pci = parent.find(':') != std::string::npos;
        fs::rename(it->path(), fs::path(root_) / (pci ? "bus/pci/devices" : "bus/auxiliary/devices") / parent /
                                   "infiniband" / name);
        break;
    }
}

void FakeRdmaSysfs::delete_rdma_device(const std::string& name) {
    std::error_code ec;
    fs::remove_all(fs::path(root_) / "class/infiniband" / name, ec);
    fs::remove_all(hidden(root_, name), ec);
    for (const char* bus : {"bus/pci/devices", "bus/auxiliary/devices"})
        for (fs::directory_iterator it(fs::path(root_) / bus, ec), end; !ec && it != end; it.increment(ec))
            fs::remove_all(it->path() / "infiniband" / name, ec);
    for (fs::directory_iterator it(fs::path(root_) / ".hidden", ec), end; !ec && it != end; it.increment(ec))
        if (it->path().filename().string().rfind(name + ".parent-", 0) == 0) fs::remove_all(it->path(), ec);
}

void FakeRdmaSysfs::add_netdev(const std::string& ifname, unsigned type, const std::string& pkey,
                               const std::string& mode) {
    const fs::path dir = fs::path(root_) / "class/net" / ifname;
    write(dir / "type", std::to_string(type));
    if (!pkey.empty()) write(dir / "pkey", pkey);
    if (!mode.empty()) write(dir / "mode", mode);
}

void FakeRdmaSysfs::add_rdma_cm(const std::string& device, unsigned ports) {
    const fs::path dir = fs::path(configfs_root()) / "rdma_cm";
    fs::create_directories(dir);
    if (device.empty()) return;
    for (unsigned port = 1; port <= ports; ++port)
        write(dir / device / "ports" / std::to_string(port) / "default_roce_tos", "0");
}

void FakeRdmaSysfs::reset_rdma_cm(const std::string& device) {
    const fs::path ports = fs::path(configfs_root()) / "rdma_cm" / device / "ports";
    std::error_code ec;
    for (const auto& port : fs::directory_iterator(ports, ec)) write(port.path() / "default_roce_tos", "0");
}

std::string FakeRdmaSysfs::rdma_cm_tos(const std::string& device, unsigned port) const {
    std::ifstream in(fs::path(configfs_root()) / "rdma_cm" / device / "ports" / std::to_string(port) /
                     "default_roce_tos");
    std::string value;
    in >> value;
    return value;
}

}  // namespace rdmanet::test
