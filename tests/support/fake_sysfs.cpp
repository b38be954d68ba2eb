#include "support/fake_sysfs.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rdmanet::test {

namespace fs = std::filesystem;

namespace {

void symlink_to(const fs::path& target, const fs::path& link) {
    std::error_code ec;
    fs::remove(link, ec);
    fs::create_directories(link.parent_path());
    fs::create_directory_symlink(target, link);
}

}  // namespace

FakeSysfs::FakeSysfs() {
    std::string pattern = (fs::temp_directory_path() / "rdmanet-sysfs-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
    fs::create_directories(fs::path(root_) / "bus/pci/devices");
    fs::create_directories(fs::path(root_) / "bus/pci/drivers");
    fs::create_directories(fs::path(root_) / "bus/auxiliary/devices");
    fs::create_directories(fs::path(root_) / "class/net");
    fs::create_directories(fs::path(root_) / "class/infiniband");
}

FakeSysfs::~FakeSysfs() {
    std::error_code ec;
    fs::remove_all(root_, ec);
}

std::string FakeSysfs::function_dir(const std::string& pci) const {
    return (fs::path(root_) / "devices/pci0000:00" / pci).string();
}

void FakeSysfs::write_file(const std::string& relative, const std::string& content) const {
    const fs::path path = fs::path(root_) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
}

std::string FakeSysfs::read(const std::string& relative) const {
    std::ifstream in(fs::path(root_) / relative);
    std::ostringstream body;
    if (in) body << in.rdbuf();
    return body.str();
}

void FakeSysfs::add_function(const std::string& pci, const std::optional<std::string>& netdev,
                             const std::string& driver, bool infiniband) {
    const fs::path dir = function_dir(pci);
    fs::create_directories(dir);
    std::ofstream(dir / "vendor") << "0x15b3\n";
    symlink_to(dir, fs::path(root_) / "bus/pci/devices" / pci);
    set_driver(pci, driver);
    if (netdev) add_netdev(pci, *netdev, infiniband);
}

void FakeSysfs::add_pf(const std::string& pci, const std::string& netdev, bool infiniband, const std::string& driver) {
    add_function(pci, netdev, driver, infiniband);
    std::ofstream(fs::path(function_dir(pci)) / "sriov_numvfs") << "0\n";
}

void FakeSysfs::add_vf(const std::string& pf_pci, unsigned index, const std::string& pci,
                       const std::optional<std::string>& netdev, const std::string& driver) {
    const bool infiniband = read("class/net/" + [&] {
                                // the PF's first netdev decides the VF's link type
                                for (const auto& e : fs::directory_iterator(fs::path(function_dir(pf_pci)) / "net"))
                                    return e.path().filename().string();
                                return std::string();
                            }() + "/type") == "32\n";
    add_function(pci, netdev, driver, infiniband);
    symlink_to(function_dir(pf_pci), fs::path(function_dir(pci)) / "physfn");
    symlink_to(function_dir(pci), fs::path(function_dir(pf_pci)) / ("virtfn" + std::to_string(index)));
    unsigned count = 0;
    for (const auto& e : fs::directory_iterator(function_dir(pf_pci)))
        if (e.path().filename().string().rfind("virtfn", 0) == 0) ++count;
    std::ofstream(fs::path(function_dir(pf_pci)) / "sriov_numvfs") << count << "\n";
}

void FakeSysfs::add_aux_sf(const std::string& parent_pci, const std::string& aux_id,
                           const std::optional<std::string>& netdev, const std::optional<std::string>& rdma_device) {
    const fs::path dir = fs::path(function_dir(parent_pci)) / aux_id;
    fs::create_directories(dir);
    symlink_to(dir, fs::path(root_) / "bus/auxiliary/devices" / aux_id);
    if (netdev) {
        fs::create_directories(dir / "net" / *netdev);
        fs::create_directories(fs::path(root_) / "class/net" / *netdev);
        symlink_to(dir, fs::path(root_) / "class/net" / *netdev / "device");
        write_file("class/net/" + *netdev + "/type", "1\n");
    }
    if (rdma_device) {
        fs::create_directories(dir / "infiniband" / *rdma_device);
        symlink_to(dir, fs::path(root_) / "class/infiniband" / *rdma_device / "device");
    }
}

void FakeSysfs::add_rdma_device(const std::string& pci, const std::string& name) {
    fs::create_directories(fs::path(function_dir(pci)) / "infiniband" / name);
    symlink_to(function_dir(pci), fs::path(root_) / "class/infiniband" / name / "device");
}

void FakeSysfs::remove_rdma_device(const std::string& pci, const std::string& name) {
    std::error_code ec;
    fs::remove_all(fs::path(function_dir(pci)) / "infiniband" / name, ec);
    fs::remove_all(fs::path(root_) / "class/infiniband" / name, ec);
}

void FakeSysfs::add_soft_rdma_device(const std::string& name, const std::string& netdev) {
    const std::string port = "class/infiniband/" + name + "/ports/1/";
    fs::create_directories(fs::path(root_) / port / "gid_attrs/ndevs");
    write_file(port + "state", "4: ACTIVE\n");
    write_file(port + "link_layer", "Ethernet\n");
    write_file(port + "gid_attrs/ndevs/0", netdev + "\n");
}

void FakeSysfs::add_netdev(const std::string& pci, const std::string& name, bool infiniband) {
    fs::create_directories(fs::path(function_dir(pci)) / "net" / name);
    fs::create_directories(fs::path(root_) / "class/net" / name);
    symlink_to(function_dir(pci), fs::path(root_) / "class/net" / name / "device");
    write_file("class/net/" + name + "/type", infiniband ? "32\n" : "1\n");
}

void FakeSysfs::remove_netdev(const std::string& pci, const std::string& name) {
    std::error_code ec;
    fs::remove_all(fs::path(function_dir(pci)) / "net" / name, ec);
    fs::remove_all(fs::path(root_) / "class/net" / name, ec);
}

void FakeSysfs::rename_netdev(const std::string& pci, const std::string& from, const std::string& to) {
    const bool infiniband = read("class/net/" + from + "/type") == "32\n";
    remove_netdev(pci, from);
    add_netdev(pci, to, infiniband);
}

void FakeSysfs::set_driver(const std::string& pci, const std::string& driver) {
    const fs::path link = fs::path(function_dir(pci)) / "driver";
    std::error_code ec;
    fs::remove(link, ec);
    if (driver.empty()) return;
    const fs::path drv = fs::path(root_) / "bus/pci/drivers" / driver;
    fs::create_directories(drv);
    for (const char* attr : {"bind", "unbind"})
        if (!fs::exists(drv / attr)) std::ofstream(drv / attr) << "";
    symlink_to(drv, link);
}

}  // namespace rdmanet::test
