// RDMA GID tables from sysfs, and a sysfs view of another network namespace (rdma_gids.hpp).
#include "rdmanet/netns/rdma_gids.hpp"

#include <sched.h>
#include <sys/mount.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "rdmanet/netns/error.hpp"

namespace rdmanet::netns {
namespace fs = std::filesystem;

namespace {

std::string first_line(const fs::path& path) {
    std::ifstream in(path);
    std::string line;
    if (in) std::getline(in, line);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    return line;
}

bool all_zero(const std::string& gid) {
    return std::all_of(gid.begin(), gid.end(), [](char c) { return c == '0' || c == ':'; });
}

std::optional<unsigned> number(const std::string& text) {
    if (text.empty() || text.size() > 6 || !std::all_of(text.begin(), text.end(), ::isdigit)) return std::nullopt;
    return static_cast<unsigned>(std::stoul(text));
}

}  // namespace

RdmaGidTable read_gid_table(const Sysfs& sysfs, const std::string& device) {
    RdmaGidTable out;
    if (device.empty() || device == "." || device == ".." || device.find('/') != std::string::npos) return out;
    const fs::path dev = fs::path(sysfs.root()) / "class/infiniband" / device;
    std::error_code ec;
    out.exists = fs::is_directory(dev, ec);
    if (!out.exists) return out;
    auto& table = out.entries;
    const fs::path ports = dev / "ports";
    for (const auto& port_name : sorted_entry_names(ports.string())) {
        const auto port = number(port_name);
        if (!port) continue;
        const fs::path dir = ports / port_name;
        if (first_line(dir / "link_layer") == "Ethernet") out.roce = true;
        for (const auto& index_name : sorted_entry_names((dir / "gids").string())) {
            const auto index = number(index_name);
            if (!index) continue;
            std::string gid = first_line(dir / "gids" / index_name);
            if (gid.empty() || all_zero(gid)) continue;
            std::transform(gid.begin(), gid.end(), gid.begin(), [](unsigned char c) { return std::tolower(c); });
            table.push_back({*port, *index, gid, first_line(dir / "gid_attrs/types" / index_name)});
        }
    }
    std::sort(table.begin(), table.end(),
              [](const auto& a, const auto& b) { return a.port != b.port ? a.port < b.port : a.index < b.index; });
    return out;
}

void with_netns_sysfs(const NetNamespace& ns, const std::function<void(const Sysfs&)>& fn) {
    std::exception_ptr failure;
    // A thread of its own: unshare(CLONE_NEWNS) gives it a private mount namespace (and a private
    // fs context), so the sysfs mounted below exists for this thread only and disappears when it
    // ends; setns(CLONE_NEWNET) makes that sysfs show the pod's namespace-tagged entries.
    std::thread worker([&] {
        try {
            if (::unshare(CLONE_NEWNS) != 0)
                throw KernelError(errno, "unshare a mount namespace to read the pod's sysfs");
            if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
                throw KernelError(errno, "make the private mount namespace's mounts private");
            if (::setns(ns.fd(), CLONE_NEWNET) != 0) throw KernelError(errno, "enter the pod's network namespace");
            if (::mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
                throw KernelError(errno, "mount sysfs from inside the pod's network namespace");
            fn(Sysfs("/sys"));
        } catch (...) {
            failure = std::current_exception();
        }
    });
    worker.join();
    if (failure) std::rethrow_exception(failure);
}

}  // namespace rdmanet::netns
