#pragma once
// Is the pod an attachment was made for still there? The plugin records the identity of the pod's
// network namespace at ADD (the nsfs inode behind CNI_NETNS); the node agent compares it later.
// A runtime may reuse a netns path for a new pod, so "the path exists" is not enough: the
// namespace behind it must be the one recorded.
#include <cstdint>
#include <string>
#include <string_view>

#include "rdmanet/cni/state/attachment_state.hpp"

namespace rdmanet::cni {

struct NetnsIdentity {
    std::uint64_t dev = 0;
    std::uint64_t inode = 0;
    bool known() const { return inode != 0; }
    bool operator==(const NetnsIdentity&) const = default;
};

// The identity of an open namespace fd (fstat); {0,0} when fstat fails.
NetnsIdentity netns_identity_of_fd(int fd);
// The identity of the namespace `path` names now; {0,0} when the path is gone or not a live
// network namespace (nsfs).
NetnsIdentity netns_identity_of_path(const std::string& path);

enum class SandboxStatus {
    alive,     // the recorded namespace still exists at the recorded path
    gone,      // the path is gone or no longer a network namespace
    replaced,  // the path names a different namespace now (reused for another pod)
    unknown,   // nothing to compare with (no netns path, or its directory is not visible here):
               // never repaired
};
std::string_view sandbox_status_name(SandboxStatus status);

// Pure: the decision from what was recorded and what the path names now.
SandboxStatus classify_sandbox(const std::string& recorded_path, NetnsIdentity recorded, NetnsIdentity now);
// classify_sandbox with the current identity of state.netns; unknown when the path's directory
// does not exist here.
SandboxStatus sandbox_status(const AttachmentState& state);

}  // namespace rdmanet::cni
