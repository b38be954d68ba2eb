#pragma once
// Node policy enforcement that writes the audit log: the refusals and the checks of a network
// configuration against the node policy (config/policy.hpp), made before anything is opened.
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/protocol/error.hpp"

namespace rdmanet::cni {

// ---- refusals ---------------------------------------------------------------------------------

// Logs the refusal (spdlog warn + one line appended to policy.audit_log, created 0600 inside
// log_dir, best effort) and throws Error(code, msg, details). `msg` must not carry secrets.
[[noreturn]] void refuse(const NodePolicy& policy, ErrorCode code, const std::string& msg,
                         const std::string& details = "");

// One line in policy.audit_log (timestamped, control characters escaped, best effort): decisions
// the admin should be able to find later, such as a DEL that succeeded despite a refused config.
void audit_line(const NodePolicy& policy, const std::string& line);

// ---- configuration checks (before anything is opened) ----------------------------------------

// Code 7 "mode X is not allowed on this node" unless policy.modes is absent or lists it.
void check_mode_allowed(const NodePolicy& policy, std::string_view mode);
// Refuses (code 7, naming the key) a "sysctl" key the policy's sysctls globs do not match; the
// key is matched in its IFNAME form ("net.ipv4.conf.IFNAME.arp_ignore").
void check_sysctl_allowed(const NodePolicy& policy, const std::string& key_with_ifname_placeholder,
                          const std::string& key_as_written);
// Code 7 naming `key` ("logFile", "ipam.log_file") and log_dir unless `path` lies inside log_dir
// (is_path_inside). Empty path = no log, always fine.
void check_log_file(const NodePolicy& policy, std::string_view key, const std::string& path);
// Code 7 unless `path` lies inside one of `dirs`; `key` and the dirs are named in the message.
void check_path_in(const NodePolicy& policy, std::string_view key, const std::string& path,
                   const std::vector<std::string>& dirs);

}  // namespace rdmanet::cni
