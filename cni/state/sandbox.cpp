#include "rdmanet/cni/state/sandbox.hpp"

#include <filesystem>

#include <sys/stat.h>

#include "rdmanet/netns/namespace.hpp"

namespace rdmanet::cni {

NetnsIdentity netns_identity_of_fd(int fd) {
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) return {};
    return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

NetnsIdentity netns_identity_of_path(const std::string& path) {
    if (path.empty() || netns::probe_netns(path) != netns::NetnsStatus::ok) return {};
    // stat follows the bind mount to the nsfs inode, the namespace's identity.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {};
    return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

std::string_view sandbox_status_name(SandboxStatus status) {
    switch (status) {
    case SandboxStatus::alive: return "alive";
    case SandboxStatus::gone: return "gone";
    case SandboxStatus::replaced: return "replaced";
    case SandboxStatus::unknown: return "unknown";
    }
    return "unknown";
}

SandboxStatus classify_sandbox(const std::string& recorded_path, NetnsIdentity recorded, NetnsIdentity now) {
    if (recorded_path.empty()) return SandboxStatus::unknown;
    if (!now.known()) return SandboxStatus::gone;
    // A state written before identities were recorded: the path alone decides.
    if (!recorded.known()) return SandboxStatus::alive;
    return recorded == now ? SandboxStatus::alive : SandboxStatus::replaced;
}

SandboxStatus sandbox_status(const AttachmentState& state) {
    // A path whose directory this process cannot see at all (the agent's container lacks the
    // runtime's netns mount, or the path is a /proc/<pid>/ns/net of another PID namespace) tells
    // nothing about the namespace: never conclude "gone" from it.
    if (!state.netns.empty()) {
        const auto parent = std::filesystem::path(state.netns).parent_path();
        std::error_code ec;
        if (parent.empty() || !std::filesystem::is_directory(parent, ec)) return SandboxStatus::unknown;
    }
    return classify_sandbox(state.netns, {state.netns_dev, state.netns_inode}, netns_identity_of_path(state.netns));
}

}  // namespace rdmanet::cni
