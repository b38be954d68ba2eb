// Multus device-info file: tells the pod, through Multus' network-status, which
// PCI function and which RDMA device are its own.
//
// The path comes from runtimeConfig.CNIDeviceInfoFile, which a NAD author can also write
// literally into the network configuration. The plugin runs as root, so the file is only ever
// written or removed below the node policy's deviceInfoDirs, through directory fds opened
// without following symlinks (confined_file.hpp): otherwise the author could make it replace
// or delete any file of the node.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "rdmanet/base/atomic_file.hpp"
#include "rdmanet/cni/policy/checks.hpp"
#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/cni/modes/sriov/sriov.hpp"
#include "rdmanet/base/confined_file.hpp"

namespace rdmanet::cni {

namespace {

using base::UniqueFd;

constexpr std::size_t kMaxDeviceInfoBytes = 1 << 20;

// The directory holding the file, opened confined to the allowed directory that contains it,
// and the file's name in it. nullopt-like (dir invalid) only when `create` is no and a
// component is missing.
struct ParentDir {
    UniqueFd dir;
    std::string leaf;
};

ParentDir open_parent(const std::vector<std::string>& allowed_dirs, const std::string& path, base::CreateDirs create) {
    if (is_device_plugin_info_file(path, allowed_dirs))
        throw Error(ErrorCode::invalid_config, "CNIDeviceInfoFile " + path +
                                                   " is a device plugin's or DRA driver's device-info file (dp/): "
                                                   "the plugin never writes it");
    const std::string base = base::containing_dir(path, allowed_dirs);
    const auto slash = path.find_last_of('/');
    if (base.empty() || slash == std::string::npos || slash + 1 == path.size())
        throw Error(ErrorCode::invalid_config, "CNIDeviceInfoFile " + path +
                                                   " is outside the node policy's deviceInfoDirs (" +
                                                   base::join_dirs(allowed_dirs) + ")");
    ParentDir parent;
    parent.leaf = path.substr(slash + 1);
    try {
        parent.dir = base::open_confined_dir(base, path.substr(0, slash), create);
    } catch (const base::ConfinedFileError& e) {
        if (create == base::CreateDirs::no && e.errno_value == ENOENT) return parent;
        throw Error(ErrorCode::io_failure, "cannot open the directory of device-info file " + path + ": " + e.what());
    }
    return parent;
}

// What the file holds now ("" when it does not exist). A symlink or a non-regular file in its
// place is an error: Multus writes a regular file, anything else was planted.
std::string read_existing(const ParentDir& parent, const std::string& path) {
    UniqueFd fd(
        ::openat(parent.dir.get(), parent.leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd) {
        if (errno == ENOENT) return "";
        throw Error(ErrorCode::io_failure,
                    "cannot read device-info file " + path + ": " +
                        (errno == ELOOP ? std::string("it is a symlink") : std::strerror(errno)));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        throw Error(ErrorCode::io_failure, "device-info file " + path + " is not a regular file");
    std::string text;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > kMaxDeviceInfoBytes) {
            spdlog::warn("device-info file {} larger than {} bytes: rewritten", path, kMaxDeviceInfoBytes);
            return "";
        }
    }
    return text;
}

}  // namespace

void write_device_info(const std::vector<std::string>& allowed_dirs, const std::string& path, const std::string& pci,
                       const std::string& pf_pci, const std::string& rdma_device) {
    const ParentDir parent = open_parent(allowed_dirs, path, base::CreateDirs::yes);

    // Multus copies the device plugin's file here before ADD; keep what it holds (representor,
    // vhost-net ...) and fill in ours.
    nlohmann::json info = nlohmann::json::object();
    if (const std::string body = read_existing(parent, path); !body.empty()) {
        try {
            info = parse_json_bounded(body);
        } catch (const std::exception& e) {
            spdlog::warn("device-info file {} unreadable ({}): rewritten", path, e.what());
        }
    }
    if (!info.is_object()) info = nlohmann::json::object();
    info["type"] = "pci";
    info["version"] = "1.1.0";
    if (!info.contains("pci") || !info["pci"].is_object()) info["pci"] = nlohmann::json::object();
    info["pci"]["pci-address"] = pci;
    if (!pf_pci.empty()) info["pci"]["pf-pci-address"] = pf_pci;
    if (!rdma_device.empty()) info["pci"]["rdma-device"] = rdma_device;

    // Atomic in the confined directory fd: Multus (or the pod's reader) never sees half a file.
    try {
        base::write_file_atomically(parent.dir.get(), parent.leaf, info.dump(), 0600);
    } catch (const std::system_error& e) {
        throw Error(ErrorCode::io_failure, "cannot write device-info file " + path + ": " + e.what());
    }
}

void add_rdma_to_device_info(const std::vector<std::string>& allowed_dirs, const std::string& path,
                             const std::string& rdma_device, const nlohmann::json& roce_gids) {
    const ParentDir parent = open_parent(allowed_dirs, path, base::CreateDirs::no);
    if (!parent.dir) return;
    const std::string body = read_existing(parent, path);
    if (body.empty()) return;
    nlohmann::json info;
    try {
        info = parse_json_bounded(body);
    } catch (const std::exception& e) {
        spdlog::warn("device-info file {} unreadable ({}): RDMA details not added", path, e.what());
        return;
    }
    if (!info.is_object() || !info.contains("pci") || !info["pci"].is_object()) {
        spdlog::info("device-info file {} describes no PCI function: RDMA details not added", path);
        return;
    }
    if (!rdma_device.empty()) info["pci"]["rdma-device"] = rdma_device;
    info["pci"]["roce-gids"] = roce_gids;
    try {
        base::write_file_atomically(parent.dir.get(), parent.leaf, info.dump(), 0600);
    } catch (const std::system_error& e) {
        throw Error(ErrorCode::io_failure, "cannot write device-info file " + path + ": " + e.what());
    }
}

void remove_device_info(const std::vector<std::string>& allowed_dirs, const std::string& path) {
    if (path.empty()) return;
    if (base::containing_dir(path, allowed_dirs).empty()) {
        // Recorded by an ADD under another policy: not ours to delete any more.
        spdlog::warn("device-info file {} left: outside the node policy's deviceInfoDirs ({})", path,
                     base::join_dirs(allowed_dirs));
        return;
    }
    if (is_device_plugin_info_file(path, allowed_dirs)) {
        // Recorded by an ADD that predates the refusal of such paths: the driver's file stays.
        spdlog::warn("device-info file {} left: it is the device plugin's or DRA driver's (dp/)", path);
        return;
    }
    try {
        const ParentDir parent = open_parent(allowed_dirs, path, base::CreateDirs::no);
        if (!parent.dir) return;  // its directory is gone: so is the file
        if (::unlinkat(parent.dir.get(), parent.leaf.c_str(), 0) != 0 && errno != ENOENT)
            spdlog::warn("cannot remove device-info file {}: {}", path, std::strerror(errno));
    } catch (const Error& e) {
        spdlog::warn("cannot remove device-info file {}: {}", path, e.msg());
    }
}

}  // namespace rdmanet::cni
