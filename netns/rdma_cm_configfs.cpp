// rdma_cm's configfs: the default RoCE TOS of a device (see rdma_cm_configfs.hpp).
#include "rdmanet/netns/rdma_cm_configfs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <stdexcept>
#include <vector>

#include "rdmanet/netns/error.hpp"
#include "rdmanet/base/fd.hpp"

namespace rdmanet::netns {

namespace {

bool is_dir(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The port groups the kernel made: ports/<n> for each port number.
std::vector<unsigned> port_numbers(const std::string& ports_dir) {
    std::vector<unsigned> ports;
    DIR* dir = ::opendir(ports_dir.c_str());
    if (!dir) return ports;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string_view name = entry->d_name;
        unsigned port = 0;
        const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), port);
        if (ec == std::errc() && end == name.data() + name.size() && port > 0) ports.push_back(port);
    }
    ::closedir(dir);
    return ports;
}

}  // namespace

std::string RdmaCmConfigfs::device_dir(const std::string& device) const {
    // RDMA device names come from the kernel (RDMA netlink, sysfs), but the group's path is
    // built from it: refuse anything that is not one plain component.
    if (device.empty() || device == "." || device == ".." || device.find('/') != std::string::npos ||
        device.find('\0') != std::string::npos)
        throw std::invalid_argument("not an RDMA device name: \"" + device + "\"");
    return root_ + "/rdma_cm/" + device;
}

bool RdmaCmConfigfs::available() const { return is_dir(root_ + "/rdma_cm"); }

unsigned RdmaCmConfigfs::set_default_roce_tos(const std::string& device, unsigned char tos) const {
    const std::string dir = device_dir(device);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) throw KernelError(errno, "create rdma_cm group " + dir);
    const std::string value = std::to_string(tos) + "\n";
    unsigned written = 0;
    for (unsigned port : port_numbers(dir + "/ports")) {
        const std::string file = dir + "/ports/" + std::to_string(port) + "/default_roce_tos";
        base::UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd) throw KernelError(errno, "open " + file);
        errno = 0;
        if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
            throw KernelError(errno ? errno : EIO, "write " + value.substr(0, value.size() - 1) + " to " + file);
        ++written;
    }
    return written;
}

std::optional<unsigned> RdmaCmConfigfs::default_roce_tos(const std::string& device, unsigned port) const {
    const std::string file = device_dir(device) + "/ports/" + std::to_string(port) + "/default_roce_tos";
    base::UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return std::nullopt;
    char buf[16];
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(buf, buf + n, value);
    if (ec != std::errc() || value > 255) return std::nullopt;
    return value;
}

}  // namespace rdmanet::netns
