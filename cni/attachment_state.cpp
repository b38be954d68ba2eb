#include "rdmanet/cni/attachment_state.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/error.hpp"
#include "rdmanet/cni/json.hpp"

namespace rdmanet::cni {

namespace {
constexpr int kStateVersion = 1;
constexpr const char* kSuffix = ".json";

std::string file_name(const std::string& network, const std::string& container_id,
                      const std::string& ifname) {
    // ':' is allowed in none of the three names (validated before they get here), so the
    // file name is unambiguous however the parts themselves use '-', '_' or '.'.
    return network + ":" + container_id + ":" + ifname + kSuffix;
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
}  // namespace

nlohmann::json AttachmentState::to_json() const {
    return {
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
        {"result", result},
        {"ipamType", ipam_type},
    };
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
    if (j.contains("result") && j["result"].is_object()) s.result = j["result"];
    s.ipam_type = j.value("ipamType", "");
    return s;
}

std::string StateStore::default_dir() {
    if (const char* dir = std::getenv("RDMANET_STATE_DIR"); dir && *dir) return dir;
    return "/var/lib/cni/rdmanet/state";
}

std::string StateStore::path_for(const std::string& network, const std::string& container_id,
                                 const std::string& ifname) const {
    return dir_ + "/" + file_name(network, container_id, ifname);
}

void StateStore::save(const AttachmentState& state) const {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    ::chmod(dir_.c_str(), 0700);
    const std::string path = path_for(state.network, state.container_id, state.ifname);
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    const std::string body = state.to_json().dump();

    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        throw Error(ErrorCode::io_failure, "cannot write attachment state " + tmp + ": " +
                                               std::strerror(errno));
    const bool written = ::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size());
    ::close(fd);
    if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw Error(ErrorCode::io_failure, "cannot write attachment state " + path + ": " +
                                               std::strerror(err));
    }
}

std::optional<AttachmentState> StateStore::load(const std::string& network,
                                                const std::string& container_id,
                                                const std::string& ifname) const {
    const std::string path = path_for(network, container_id, ifname);
    const std::string body = read_file(path);
    if (body.empty()) return std::nullopt;
    try {
        return AttachmentState::from_json(parse_json_bounded(body));
    } catch (const std::exception& e) {
        spdlog::warn("ignoring corrupt attachment state {}: {}", path, e.what());
        return std::nullopt;
    }
}

void StateStore::remove(const std::string& network, const std::string& container_id,
                        const std::string& ifname) const {
    const std::string path = path_for(network, container_id, ifname);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        throw Error(ErrorCode::io_failure, "cannot remove attachment state " + path + ": " +
                                               std::strerror(errno));
}

std::vector<AttachmentState> StateStore::list(const std::string& network) const {
    std::vector<AttachmentState> states;
    std::error_code ec;
    const std::string prefix = network + ":";
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
        const std::string name = entry.path().filename().string();
        if (!name.starts_with(prefix) || !name.ends_with(kSuffix)) continue;
        const std::string body = read_file(entry.path());
        try {
            auto state = AttachmentState::from_json(parse_json_bounded(body));
            if (state.network == network) states.push_back(std::move(state));
        } catch (const std::exception& e) {
            spdlog::warn("ignoring corrupt attachment state {}: {}", entry.path().string(), e.what());
        }
    }
    return states;
}

}  // namespace rdmanet::cni
