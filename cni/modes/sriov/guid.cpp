// InfiniBand VF GUIDs: node and port GUID written on the PF, then the VF's
// driver unbound and bound again through sysfs so the VF picks the new GUID up.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "rdmanet/cni/modes/sriov/sriov.hpp"
#include "rdmanet/netns/error.hpp"

namespace rdmanet::cni {

namespace {

void write_sysfs(const std::filesystem::path& path, const std::string& value) {
    // No O_CREAT: these are kernel attributes, a missing one is an error (ENOENT), never a file
    // to make.
    base::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) throw netns::KernelError(errno, "open " + path.string());
    const ssize_t n = ::write(fd.get(), value.data(), value.size());
    if (n != static_cast<ssize_t>(value.size()))
        throw netns::KernelError(n < 0 ? errno : EIO, "write " + value + " to " + path.string());
}

bool safe_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

}  // namespace

std::string current_guid(const netns::VfInfo& vf, const std::string& hwaddr) {
    if (vf.node_guid) return netns::format_guid(*vf.node_guid);
    // 20-byte IPoIB address: 4 bytes flags/QPN, 16 bytes GID whose last 8 are the port GUID.
    if (hwaddr.size() == 59) return hwaddr.substr(36);
    return "";
}

bool is_reserved_guid(const std::string& guid) {
    return guid == "00:00:00:00:00:00:00:00" || guid == "ff:ff:ff:ff:ff:ff:ff:ff";
}

void set_vf_guid(netns::VfControl& vfs, const std::string& pf, unsigned vf, const std::string& guid) {
    const auto value = netns::parse_guid(guid);
    if (!value) throw Error(ErrorCode::invalid_config, "not a GUID: " + guid);
    vfs.apply(pf, netns::VfChange::set_node_guid(vf, *value));
    vfs.apply(pf, netns::VfChange::set_port_guid(vf, *value));
}

void rebind_vf(const netns::Sysfs& sysfs, const std::string& pci, const std::string& driver) {
    if (driver.empty() || driver == "vfio-pci") return;
    if (!safe_name(driver) || !safe_name(pci)) throw netns::KernelError(EINVAL, "rebind " + pci + ": bad name");
    const auto dir = std::filesystem::path(sysfs.root()) / "bus/pci/drivers" / driver;
    write_sysfs(dir / "unbind", pci);
    write_sysfs(dir / "bind", pci);
}

}  // namespace rdmanet::cni
