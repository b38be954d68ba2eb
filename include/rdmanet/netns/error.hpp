#pragma once
// Kernel-call failures carry errno so callers can tell "gone" (ENOENT, ENODEV) from real errors.
#include <cerrno>
#include <string>
#include <system_error>

namespace rdmanet::netns {

class KernelError : public std::system_error {
public:
    // `what` names the operation and its object, e.g. "move link eth3 to netns /run/netns/x".
    KernelError(int err, const std::string& what) : std::system_error(err, std::generic_category(), what) {}
    int errno_value() const { return code().value(); }
};

}  // namespace rdmanet::netns
