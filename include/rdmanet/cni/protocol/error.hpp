#pragma once
// CNI errors: printed as the spec's error JSON on stdout, with a non-zero exit.
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rdmanet::cni {

// Spec codes (SPEC.md §6) and ours (>= 100).
enum class ErrorCode : int {
    incompatible_version = 1,
    unsupported_field = 2,
    unknown_container = 3,
    invalid_environment = 4,
    io_failure = 5,
    decode_failure = 6,
    invalid_config = 7,
    // Not in the spec's table but defined by libcni (types.ErrInvalidNetNS), whose skel returns it
    // when CNI_NETNS is the plugin's own network namespace: callers built on libcni know it.
    invalid_netns = 8,
    try_again = 11,
    not_available = 50,
    // rdmanet's own
    kernel_failure = 100,    // a netlink/syscall step failed
    device_not_found = 101,  // the configured device/master does not exist
    device_busy = 102,       // device in use (name clash, owned by another attachment)
    ipam_failure = 103,      // delegated IPAM failed without a CNI error of its own
    timeout = 104,           // a bounded step ran out of time
};

class Error : public std::runtime_error {
public:
    Error(ErrorCode code, std::string msg, std::string details = "")
        : Error(static_cast<int>(code), std::move(msg), std::move(details)) {}
    // Raw code, for errors passed through from a delegated plugin.
    Error(int code, std::string msg, std::string details = "")
        : std::runtime_error(msg), code_(code), msg_(std::move(msg)), details_(std::move(details)) {}

    int code() const { return code_; }
    const std::string& msg() const { return msg_; }
    const std::string& details() const { return details_; }

    // {"cniVersion":..., "code":..., "msg":..., "details":...}; details omitted when empty.
    nlohmann::json to_json(std::string_view cni_version) const;

private:
    int code_;
    std::string msg_;
    std::string details_;
};

}  // namespace rdmanet::cni
