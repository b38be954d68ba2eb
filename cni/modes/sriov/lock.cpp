// Per-VF serialisation and ownership, as sriov-cni does it: a bounded flock per VF so ADD and
// DEL of the same VF never interleave, and a record naming the attachment that holds the VF so
// a second ADD is refused while the holder's netns lives, and a late DEL of an old pod cannot
// reset a VF that has since been given to a new one.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "rdmanet/base/atomic_file.hpp"
#include "rdmanet/base/flock.hpp"
#include "rdmanet/base/private_dir.hpp"
#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/cni/modes/sriov/sriov.hpp"
#include "rdmanet/netns/namespace.hpp"

namespace rdmanet::cni {

namespace {

// base::make_private_dir, and 0700 also when the directory was there before.
void make_private_dir(const std::string& dir) {
    if (const std::string problem = base::make_private_dir(dir); !problem.empty())
        throw Error(ErrorCode::io_failure, "cannot create " + dir + ": " + problem);
    ::chmod(dir.c_str(), 0700);
}

}  // namespace

std::string sriov_dir(const std::string& state_dir) { return state_dir + "/sriov"; }

FileLock FileLock::acquire(const std::string& dir, const std::string& name, std::chrono::milliseconds timeout,
                           const std::string& what) {
    make_private_dir(dir);
    const std::string path = dir + "/" + name + ".lock";
    base::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) throw Error(ErrorCode::io_failure, "cannot open lock " + path + ": " + std::strerror(errno));
    // Bounded (base/flock.hpp), so a stuck holder costs at most `timeout`.
    const int err = base::flock_exclusive_within(fd.get(), timeout, std::chrono::milliseconds(20));
    if (err == ETIMEDOUT)
        throw Error(ErrorCode::timeout,
                    "timed out after " + std::to_string(timeout.count()) + " ms waiting for " + what,
                    "another ADD or DEL of the same device is running or hung (lock " + path + ")");
    if (err != 0) throw Error(ErrorCode::io_failure, "cannot lock " + path + ": " + std::strerror(err));
    return FileLock(std::move(fd));
}

std::optional<VfOwner> InUseRecords::read(const std::string& pci) const {
    std::ifstream in(dir_ + "/" + pci);
    if (!in) return std::nullopt;
    std::ostringstream body;
    body << in.rdbuf();
    try {
        const auto j = parse_json_bounded(body.str());
        return VfOwner{j.value("network", ""), j.value("containerID", ""), j.value("ifname", ""), j.value("netns", "")};
    } catch (const std::exception& e) {
        // A torn or foreign file says nothing about a live owner.
        spdlog::warn("ignoring unreadable VF record {}/{}: {}", dir_, pci, e.what());
        return std::nullopt;
    }
}

void InUseRecords::write(const std::string& pci, const VfOwner& owner) const {
    make_private_dir(dir_);
    const std::string body = nlohmann::json{
        {"network", owner.network},
        {"containerID", owner.container_id},
        {"ifname", owner.ifname},
        {"netns", owner.netns}}.dump();
    try {
        base::write_file_atomically(dir_ + "/" + pci, body, 0600);
    } catch (const std::system_error& e) {
        throw Error(ErrorCode::io_failure, "cannot record VF owner in " + dir_ + "/" + pci + ": " + e.what());
    }
}

void InUseRecords::remove(const std::string& pci) const {
    const std::string path = dir_ + "/" + pci;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        throw Error(ErrorCode::io_failure, "cannot remove VF record " + path + ": " + std::strerror(errno));
}

bool InUseRecords::claim(const std::string& pci, const VfOwner& owner) const {
    if (auto holder = read(pci)) {
        const bool same = holder->network == owner.network && holder->container_id == owner.container_id &&
                          holder->ifname == owner.ifname;
        if (same) return true;
        if (!holder->netns.empty() && netns::probe_netns(holder->netns) == netns::NetnsStatus::ok)
            throw Error(ErrorCode::device_busy,
                        "VF " + pci + " is in use by container " + holder->container_id + " (" + holder->ifname +
                            " of network " + holder->network + ", netns " + holder->netns + ")",
                        "the device plugin handed out a VF that is still attached; it is released when that "
                        "pod's DEL runs");
        spdlog::info("VF {}: stale record of container {} (netns {} gone) removed", pci, holder->container_id,
                     holder->netns);
    }
    write(pci, owner);
    return false;
}

}  // namespace rdmanet::cni
