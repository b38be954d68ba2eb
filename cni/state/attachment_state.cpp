#include "rdmanet/cni/state/attachment_state.hpp"

#include "rdmanet/base/atomic_file.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/policy/checks.hpp"

namespace rdmanet::cni {

namespace {
constexpr int kStateVersion = 1;
constexpr const char* kSuffix = ".json";

std::string file_name(const std::string& network, const std::string& container_id, const std::string& ifname) {
    // ':' is allowed in none of the three names (validated before they get here), so the
    // file name is unambiguous however the parts themselves use '-', '_' or '.'.
    return network + ":" + container_id + ":" + ifname + kSuffix;
}

// "" when missing, not a regular file, a symlink or unreadable: state is only ever written by us
// as a regular file, so anything else was planted and is ignored (and never followed).
std::string read_state_file(int dir_fd, const std::string& name) {
    const base::UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!fd) {
        if (errno == ELOOP) spdlog::warn("ignoring attachment state {}: a symlink", name);
        return {};
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (4 << 20)) return {};
    std::string body(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t done = 0;
    while (done < body.size()) {
        const ssize_t n = ::read(fd.get(), body.data() + done, body.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    body.resize(done);
    return body;
}
}  // namespace

nlohmann::json AttachmentState::to_json() const {
    nlohmann::json j = {
        {"version", kStateVersion},
        {"network", network},
        {"containerID", container_id},
        {"ifname", ifname},
        {"mode", mode},
        {"netns", netns},
        {"complete", complete},
        {"hostIfname", host_ifname},
        {"hostMac", host_mac},
        {"pciAddress", pci_address},
        {"hostWasUp", host_was_up},
        {"hostAlias", host_alias},
        {"rdmaDevice", rdma_device},
        {"childKind", child_kind},
        {"result", result},
        {"ipamType", ipam_type},
        {"netnsDev", netns_dev},
        {"netnsInode", netns_inode},
        {"cniArgs", cni_args},
        {"cniPath", cni_path},
    };
    if (!rdma_device_pod_name.empty()) j["rdmaDevicePodName"] = rdma_device_pod_name;
    if (roce_gids.is_array() && !roce_gids.empty()) j["roceGids"] = roce_gids;
    if (!netconf.is_null()) j["netconf"] = netconf;
    if (nodename) j["nodename"] = *nodename;
    if (!pod_setup.is_null()) j["podSetup"] = pod_setup;
    // A mode named like one of the keys above would lose its record rather than overwrite the
    // key; no mode is.
    if (!mode_record.is_null() && !mode.empty() && !j.contains(mode)) j[mode] = mode_record;
    return j;
}

AttachmentState AttachmentState::from_json(const nlohmann::json& j) {
    AttachmentState s;
    s.network = j.value("network", "");
    s.container_id = j.value("containerID", "");
    s.ifname = j.value("ifname", "");
    s.mode = j.value("mode", "");
    s.netns = j.value("netns", "");
    s.complete = j.value("complete", false);
    s.host_ifname = j.value("hostIfname", "");
    s.host_mac = j.value("hostMac", "");
    s.pci_address = j.value("pciAddress", "");
    s.host_was_up = j.value("hostWasUp", false);
    s.host_alias = j.value("hostAlias", "");
    s.rdma_device = j.value("rdmaDevice", "");
    s.child_kind = j.value("childKind", "");
    s.rdma_device_pod_name = j.value("rdmaDevicePodName", "");
    if (auto it = j.find("roceGids"); it != j.end() && it->is_array()) s.roce_gids = *it;
    if (j.contains("result") && j["result"].is_object()) s.result = j["result"];
    s.ipam_type = j.value("ipamType", "");
    s.netns_dev = j.value("netnsDev", std::uint64_t{0});
    s.netns_inode = j.value("netnsInode", std::uint64_t{0});
    if (j.contains("netconf") && j["netconf"].is_object()) s.netconf = j["netconf"];
    s.cni_args = j.value("cniArgs", "");
    if (auto it = j.find("nodename"); it != j.end() && it->is_string()) s.nodename = it->get<std::string>();
    if (j.contains("cniPath") && j["cniPath"].is_array())
        for (const auto& entry : j["cniPath"])
            if (entry.is_string()) s.cni_path.push_back(entry.get<std::string>());
    if (auto it = j.find("podSetup"); it != j.end() && it->is_object()) s.pod_setup = *it;
    if (!s.mode.empty())
        if (auto it = j.find(s.mode); it != j.end() && it->is_object()) s.mode_record = *it;
    return s;
}

StateStore::StateStore(const NodePolicy& policy) : policy_(policy), dir_(policy.state_dir) {}

std::string StateStore::path_for(const std::string& network, const std::string& container_id,
                                 const std::string& ifname) const {
    return dir_ + "/" + file_name(network, container_id, ifname);
}

base::UniqueFd StateStore::open_dir(bool create) const {
    // The state dir itself is the admin's (policy/env); it must be a real directory, not a
    // symlink someone planted to make us write (as root) elsewhere. Every file operation below
    // is relative to this fd, so a rename of the dir afterwards cannot redirect us either.
    if (create) {
        std::error_code ec;
        std::filesystem::path parent = std::filesystem::path(dir_).parent_path();
        if (!parent.empty()) std::filesystem::create_directories(parent, ec);
        if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
            throw Error(ErrorCode::io_failure,
                        "cannot create attachment state dir " + dir_ + ": " + std::strerror(errno));
    }
    base::UniqueFd fd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
        const int err = errno;
        if (err == ENOENT && !create) return fd;
        struct stat st {};
        if (::lstat(dir_.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
            refuse(policy_, ErrorCode::io_failure,
                   "attachment state dir " + dir_ + " is a symlink, which is not followed",
                   "the node admin must replace it with a real directory (mode 0700)");
        throw Error(ErrorCode::io_failure, "cannot open attachment state dir " + dir_ + ": " + std::strerror(err));
    }
    if (create) ::fchmod(fd.get(), 0700);
    return fd;
}

void StateStore::save(const AttachmentState& state) const {
    const auto dir = open_dir(/*create=*/true);
    const std::string name = file_name(state.network, state.container_id, state.ifname);
    // DEL depends on this file after a crash or power loss: written atomically and durably.
    try {
        base::write_file_atomically(dir.get(), name, state.to_json().dump(), 0600);
    } catch (const std::system_error& e) {
        throw Error(ErrorCode::io_failure, "cannot write attachment state " + dir_ + "/" + name + ": " + e.what());
    }
}

std::optional<AttachmentState> StateStore::load(const std::string& network, const std::string& container_id,
                                                const std::string& ifname) const {
    const std::string path = path_for(network, container_id, ifname);
    const auto dir = open_dir(/*create=*/false);
    if (!dir) return std::nullopt;
    const std::string body = read_state_file(dir.get(), file_name(network, container_id, ifname));
    if (body.empty()) return std::nullopt;
    try {
        return AttachmentState::from_json(parse_json_bounded(body));
    } catch (const std::exception& e) {
        spdlog::warn("ignoring corrupt attachment state {}: {}", path, e.what());
        return std::nullopt;
    }
}

void StateStore::remove(const std::string& network, const std::string& container_id, const std::string& ifname) const {
    const std::string path = path_for(network, container_id, ifname);
    const auto dir = open_dir(/*create=*/false);
    if (!dir) return;
    if (::unlinkat(dir.get(), file_name(network, container_id, ifname).c_str(), 0) != 0 && errno != ENOENT)
        throw Error(ErrorCode::io_failure, "cannot remove attachment state " + path + ": " + std::strerror(errno));
}

std::vector<AttachmentState> StateStore::list(const std::string& network) const {
    std::vector<AttachmentState> states;
    for (auto& state : list_all())
        if (state.network == network) states.push_back(std::move(state));
    return states;
}

std::vector<AttachmentState> StateStore::list_all() const {
    std::vector<AttachmentState> states;
    const auto dir = open_dir(/*create=*/false);
    if (!dir) return states;
    // fdopendir takes ownership of its fd: hand it a duplicate.
    DIR* d = ::fdopendir(::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0));
    if (!d) return states;
    while (const dirent* entry = ::readdir(d)) {
        const std::string name = entry->d_name;
        if (!name.ends_with(kSuffix) || name.find(':') == std::string::npos) continue;
        const std::string body = read_state_file(dir.get(), name);
        if (body.empty()) continue;
        try {
            states.push_back(AttachmentState::from_json(parse_json_bounded(body)));
        } catch (const std::exception& e) {
            spdlog::warn("ignoring corrupt attachment state {}/{}: {}", dir_, name, e.what());
        }
    }
    ::closedir(d);
    return states;
}

}  // namespace rdmanet::cni
