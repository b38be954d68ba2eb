// Multus device-info file (REFERENCE 2.4): tells the pod, through Multus' network-status, which
// PCI function and which RDMA device are its own.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/json.hpp"
#include "rdmanet/cni/sriov.hpp"

namespace rdmanet::cni::sriov {

void write_device_info(const std::string& path, const std::string& pci, const std::string& pf_pci,
                       const std::string& rdma_device) {
    // Multus copies the device plugin's file here before ADD; keep what it holds (representor,
    // vhost-net ...) and fill in ours.
    nlohmann::json info = nlohmann::json::object();
    {
        std::ifstream in(path);
        std::ostringstream body;
        if (in) body << in.rdbuf();
        try {
            if (!body.str().empty()) info = parse_json_bounded(body.str());
        } catch (const std::exception& e) {
            spdlog::warn("device-info file {} unreadable ({}): rewritten", path, e.what());
        }
        if (!info.is_object()) info = nlohmann::json::object();
    }
    info["type"] = "pci";
    info["version"] = "1.1.0";
    if (!info.contains("pci") || !info["pci"].is_object()) info["pci"] = nlohmann::json::object();
    info["pci"]["pci-address"] = pci;
    if (!pf_pci.empty()) info["pci"]["pf-pci-address"] = pf_pci;
    if (!rdma_device.empty()) info["pci"]["rdma-device"] = rdma_device;

    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    const std::string text = info.dump();
    netns::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    const bool ok = fd && ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
    fd.reset();
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw Error(ErrorCode::io_failure, "cannot write device-info file " + path + ": " + std::strerror(err));
    }
}

void remove_device_info(const std::string& path) {
    if (path.empty()) return;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        spdlog::warn("cannot remove device-info file {}: {}", path, std::strerror(errno));
}

}  // namespace rdmanet::cni::sriov
