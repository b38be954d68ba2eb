// Refusals and the configuration-side checks of the node policy (paths, modes, sysctl keys).
#include <chrono>
#include <fcntl.h>
#include <fnmatch.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/policy/checks.hpp"
#include "rdmanet/base/confined_file.hpp"
#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

namespace {

std::string timestamp() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// One line per refusal in the admin's audit log; best effort (a full disk must not turn a
// refusal into a different error). Control characters are escaped: the message quotes input.
void append_audit(const NodePolicy& policy, const std::string& line) {
    if (policy.audit_log.empty()) return;
    try {
        auto fd = base::open_confined(policy.log_dir, policy.audit_log, O_WRONLY | O_APPEND | O_CREAT, 0600,
                                      base::CreateDirs::yes);
        std::string escaped;
        for (unsigned char c : line) {
            if (c < 0x20 || c == 0x7f) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "\\x%02x", c);
                escaped += hex;
            } else {
                escaped += static_cast<char>(c);
            }
        }
        escaped = timestamp() + " pid " + std::to_string(::getpid()) + " " + escaped + "\n";
        // O_APPEND + one write: lines of concurrent plugins do not interleave.
        [[maybe_unused]] auto n = ::write(fd.get(), escaped.data(), escaped.size());
    } catch (const std::exception&) {
    }
}

}  // namespace

void audit_line(const NodePolicy& policy, const std::string& line) { append_audit(policy, line); }

void refuse(const NodePolicy& policy, ErrorCode code, const std::string& msg, const std::string& details) {
    spdlog::warn("refused by node policy: {}", msg);
    append_audit(policy, "refused: " + msg);
    throw Error(code, msg, details);
}

void check_mode_allowed(const NodePolicy& policy, std::string_view mode) {
    if (!policy.modes) return;
    for (const auto& allowed : *policy.modes)
        if (allowed == mode) return;
    std::string list;
    for (const auto& allowed : *policy.modes) list += (list.empty() ? "" : ", ") + allowed;
    refuse(
        policy, ErrorCode::invalid_config,
        "mode " + text::quote(mode) + " is not allowed on this node (allowed: " + (list.empty() ? "none" : list) + ")",
        "the node policy " + (policy.source.empty() ? std::string("defaults") : policy.source) + " lists the modes");
}

void check_sysctl_allowed(const NodePolicy& policy, const std::string& key_with_ifname_placeholder,
                          const std::string& key_as_written) {
    if (!policy.sysctls) return;
    for (const auto& glob : *policy.sysctls)
        if (::fnmatch(glob.c_str(), key_with_ifname_placeholder.c_str(), 0) == 0) return;
    std::string list;
    for (const auto& glob : *policy.sysctls) list += (list.empty() ? "" : ", ") + glob;
    refuse(
        policy, ErrorCode::invalid_config,
        "sysctl." + key_as_written + " is not allowed on this node (allowed: " + (list.empty() ? "none" : list) + ")",
        "the node policy " + (policy.source.empty() ? std::string("defaults") : policy.source) +
            " lists the sysctl keys a network may set");
}

void check_path_in(const NodePolicy& policy, std::string_view key, const std::string& path,
                   const std::vector<std::string>& dirs) {
    if (path.empty() || !base::containing_dir(path, dirs).empty()) return;
    refuse(policy, ErrorCode::invalid_config,
           std::string(key) + " " + text::quote(path) + " is outside what the node policy allows (" +
               base::join_dirs(dirs) + "): use a path there without \"..\", or ask the node admin",
           "node policy: " + (policy.source.empty() ? std::string("built-in defaults") : policy.source));
}

bool is_device_plugin_info_file(std::string_view path, const std::vector<std::string>& device_info_dirs) {
    std::vector<std::string> bases = device_info_dirs;
    bases.emplace_back(kMultusDevInfoDir);
    bases.emplace_back(kMultusDevInfoRunDir);
    for (const auto& base : bases)
        if (base::is_path_inside(path, base + "/dp")) return true;
    return false;
}

void check_not_device_plugin_info_file(const NodePolicy& policy, std::string_view key, const std::string& path) {
    if (!is_device_plugin_info_file(path, policy.device_info_dirs)) return;
    refuse(policy, ErrorCode::invalid_config,
           std::string(key) + " " + text::quote(path) +
               " is a device plugin's or DRA driver's device-info file (the dp/ directory), which the plugin "
               "must not rewrite or remove: leave CNIDeviceInfoFile to Multus, which passes a file of the "
               "cni/ directory",
           "device-info files below dp/ belong to the device plugin or DRA driver");
}

void check_log_file(const NodePolicy& policy, std::string_view key, const std::string& path) {
    check_path_in(policy, key, path, {policy.log_dir});
}

}  // namespace rdmanet::cni
