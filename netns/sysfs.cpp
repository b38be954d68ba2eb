// sysfs lookups under a configurable root, and /proc/sys writes.
#include "rdmanet/netns/sysfs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "rdmanet/netns/error.hpp"
#include "rdmanet/base/fd.hpp"

namespace rdmanet::netns {
namespace fs = std::filesystem;
namespace {

// One path component taken from a config (a PCI address, an aux device id, an ifname): it must
// not climb out of the directory it is looked up in.
bool safe_component(std::string_view name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos;
}

// A relative path made of safe components (no "", ".", "..").
bool safe_relative_path(std::string_view path) {
    if (path.empty() || path.front() == '/') return false;
    std::size_t start = 0;
    while (start <= path.size()) {
        const std::size_t end = std::min(path.find('/', start), path.size());
        if (!safe_component(path.substr(start, end - start))) return false;
        start = end + 1;
    }
    return true;
}

// Sorted names of the entries of `dir`; empty when it does not exist or cannot be read.
std::vector<std::string> entries(const fs::path& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        names.push_back(it->path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

bool path_exists(const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec);
}

// "DDDD:BB:DD.F", lower-case hex as sysfs writes it.
bool is_pci_address(std::string_view s) {
    static constexpr std::string_view shape = "hhhh:hh:hh.h";
    if (s.size() != shape.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (shape[i] != 'h') {
            if (c != shape[i]) return false;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

}  // namespace

bool Sysfs::pci_device_exists(const std::string& pci) const {
    return safe_component(pci) && path_exists(fs::path(root_) / "bus/pci/devices" / pci);
}

bool Sysfs::aux_device_exists(const std::string& id) const {
    return safe_component(id) && path_exists(fs::path(root_) / "bus/auxiliary/devices" / id);
}

std::vector<std::string> Sysfs::pci_netdevs(const std::string& pci) const {
    if (!safe_component(pci)) return {};
    const fs::path dev = fs::path(root_) / "bus/pci/devices" / pci;
    std::vector<std::string> names = entries(dev / "net");
    // virtio-net: the netdev hangs off the virtio device below the PCI function.
    for (const std::string& child : entries(dev)) {
        if (child.rfind("virtio", 0) != 0) continue;
        for (std::string& name : entries(dev / child / "net")) names.push_back(std::move(name));
    }
    return names;
}

std::vector<std::string> Sysfs::aux_netdevs(const std::string& id) const {
    if (!safe_component(id)) return {};
    return entries(fs::path(root_) / "bus/auxiliary/devices" / id / "net");
}

std::vector<std::string> Sysfs::kernelpath_netdevs(const std::string& kernelpath) const {
    // Only absolute paths below /sys/devices, re-rooted under root_.
    constexpr std::string_view prefix = "/sys/";
    if (kernelpath.rfind(prefix, 0) != 0) return {};
    std::string_view rel = std::string_view(kernelpath).substr(prefix.size());
    while (!rel.empty() && rel.back() == '/') rel.remove_suffix(1);
    if (rel.rfind("devices/", 0) != 0 || !safe_relative_path(rel)) return {};
    return entries(fs::path(root_) / rel / "net");
}

std::optional<std::string> Sysfs::pci_driver(const std::string& pci) const {
    if (!safe_component(pci)) return std::nullopt;
    return symlink_target_name(fs::path(root_) / "bus/pci/devices" / pci / "driver");
}

std::optional<std::string> Sysfs::netdev_pci_address(const std::string& ifname) const {
    if (!safe_component(ifname)) return std::nullopt;
    const fs::path device = fs::path(root_) / "class/net" / ifname / "device";
    auto name = symlink_target_name(device);
    if (!name) return std::nullopt;  // virtual links have no device
    if (is_pci_address(*name)) return name;
    // virtio-net: device -> .../0000:00:03.0/virtio0; the PCI function is its parent. The
    // link is relative to the netdev's real directory, so resolve the whole path.
    if (name->rfind("virtio", 0) == 0) {
        std::error_code ec;
        const fs::path resolved = fs::canonical(device, ec);
        if (ec) return std::nullopt;
        const std::string parent = resolved.parent_path().filename().string();
        if (is_pci_address(parent)) return parent;
    }
    return std::nullopt;  // an auxiliary device (mlx5 SF) or another bus: not a PCI function
}

void write_sysctl(const std::string& key, const std::string& value) {
    if (!safe_relative_path(key)) throw KernelError(EINVAL, "write sysctl " + key + ": bad key");
    const std::string path = "/proc/sys/" + key;
    // /proc/sys/net resolves to the netns of the calling thread at open time.
    base::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) throw KernelError(errno, "write sysctl " + key);
    const ssize_t n = ::write(fd.get(), value.data(), value.size());
    if (n < 0) throw KernelError(errno, "write sysctl " + key + "=" + value);
    if (static_cast<std::size_t>(n) != value.size())
        throw KernelError(EIO, "write sysctl " + key + "=" + value + ": short write");
}

std::string read_sysctl(const std::string& key) {
    if (!safe_relative_path(key)) throw KernelError(EINVAL, "read sysctl " + key + ": bad key");
    const std::string path = "/proc/sys/" + key;
    base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw KernelError(errno, "read sysctl " + key);
    std::string value;
    char buf[256];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) throw KernelError(errno, "read sysctl " + key);
        if (n == 0) break;
        value.append(buf, static_cast<std::size_t>(n));
        if (value.size() > 4096) throw KernelError(EFBIG, "read sysctl " + key + ": value too long");
    }
    while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
    return value;
}

std::optional<std::string> symlink_target_name(const std::filesystem::path& link) {
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(link, ec);
    if (ec) return std::nullopt;
    std::string name = target.lexically_normal().filename().string();
    if (name.empty()) return std::nullopt;
    return name;
}

std::vector<std::string> sorted_entry_names(const std::string& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        names.push_back(it->path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace rdmanet::netns
