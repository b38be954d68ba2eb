#pragma once
// The IPAM's error type. It carries a CNI error code so that the cni layer can map it one to one to
// its own error (ipam must not depend on cni: dependencies point cni -> ipam).
#include <stdexcept>
#include <string>

namespace rdmanet::ipam {

// Codes: the CNI spec's where one fits (SPEC.md §6), rdmanet's own IPAM codes from 110 on (the cni
// layer uses 100-109 for its own).
namespace codes {
inline constexpr int unsupported_field = 2;  // a key/value we understand but cannot serve yet
inline constexpr int io_failure = 5;         // datastore could not be read or written
inline constexpr int invalid_config = 7;     // bad ipam configuration or static request
inline constexpr int try_again = 11;         // datastore busy past its timeout: retry later
inline constexpr int range_full = 110;       // no free address left in a range
inline constexpr int address_in_use = 111;   // a requested static address belongs to someone else
inline constexpr int not_allocated = 112;    // CHECK: the attachment holds no address in a range
}  // namespace codes

struct IpamError : std::runtime_error {
    int code;
    std::string msg;

    IpamError(int code_, std::string msg_) : std::runtime_error(msg_), code(code_), msg(std::move(msg_)) {}
};

// The datastore refused the credentials (HTTP 401) or the permissions (403) of this node: a
// permanent condition until an admin fixes the kubeconfig or the RBAC, never an outage to wait out
// (node-slice mode fails ADD with it rather than hand out an address it cannot publish).
struct AccessDenied : IpamError {
    long http;
    // Node-slice DEL/GC: the release is done on the node (its local store is the truth) and only
    // its publication was refused; it waits in the node's backlog.
    bool released_locally = false;
    AccessDenied(std::string msg_, long http_, bool released_locally_ = false)
        : IpamError(codes::io_failure, std::move(msg_)), http(http_), released_locally(released_locally_) {}
};

// DEL (or GC) could not have the API server take a release (no answer in the verb's budget, a
// refusal, a broken answer): the attachment's node journal entry is gone and a record of the
// release waits in the node's backlog for the node agent; the runtime retrying DEL would change
// nothing, so DEL succeeds and logs this as an error.
struct ReleaseDeferred : IpamError {
    explicit ReleaseDeferred(std::string msg_) : IpamError(codes::io_failure, std::move(msg_)) {}
};

[[noreturn]] inline void config_error(std::string msg) { throw IpamError(codes::invalid_config, std::move(msg)); }

}  // namespace rdmanet::ipam
