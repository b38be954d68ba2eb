// The node policy file: parsing (pure), loading (one read of the admin's file), rendering.
#include "rdmanet/cni/config/policy.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmanet/base/json_fields.hpp"
#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/base/confined_file.hpp"
#include "rdmanet/base/fd.hpp"

namespace rdmanet::cni {

namespace {

using nlohmann::json;

// The NAD author cannot fix the admin's file: code 4-ish "environment" error naming the file.
[[noreturn]] void policy_error(const std::string& source, const std::string& what) {
    throw Error(ErrorCode::invalid_environment, "node policy " + source + ": " + what,
                "the node admin must fix the policy file (see docs/configuration.md, Node policy)");
}

bool is_clean_absolute(const std::string& path) {
    // A directory is "clean" when a file below it would pass is_path_inside.
    return base::is_path_inside(path + "/x", path);
}

void reject_unknown_keys(const json& obj, const std::set<std::string>& known, const std::string& source,
                         const std::string& where) {
    for (auto it = obj.begin(); it != obj.end(); ++it)
        if (!known.count(it.key()))
            policy_error(source, "unknown key " + where + it.key() + " (a typo would silently change the policy)");
}

// Type errors in the admin's file are policy errors naming the file (policy_error adds the fix).
struct RaisePolicyError {
    std::string source;
    [[noreturn]] void operator()(std::string message, std::string /*details: policy_error's own*/) const {
        policy_error(source, message);
    }
};

// The members of the object at `where` ("devices." or "" at the top). The admin's file is read
// strictly: a null value is a wrong value, not an unset one, so a slip fails closed.
base::JsonFields<RaisePolicyError> fields_of(const json& obj, const std::string& source, const std::string& where) {
    const std::string path = where.empty() ? where : where.substr(0, where.size() - 1);
    return base::JsonFields<RaisePolicyError>(obj, path, RaisePolicyError{source}, base::JsonNull::value);
}

std::string get_string(const json& obj, const char* key, const std::string& fallback, const std::string& source,
                       const std::string& where) {
    return fields_of(obj, source, where).string(key).value_or(fallback);
}

bool get_bool(const json& obj, const char* key, bool fallback, const std::string& source, const std::string& where) {
    return fields_of(obj, source, where).boolean(key).value_or(fallback);
}

std::vector<std::string> get_list(const json& obj, const char* key, std::vector<std::string> fallback,
                                  const std::string& source, const std::string& where) {
    const auto fields = fields_of(obj, source, where);
    if (!fields.has(key)) return fallback;
    auto items = fields.strings(key);
    for (const auto& item : items)
        if (item.empty()) fields.invalid(key, "must be a list of non-empty strings");
    return items;
}

std::string dir_value(const json& obj, const char* key, const std::string& fallback, const std::string& source) {
    auto dir = get_string(obj, key, fallback, source, "");
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (!is_clean_absolute(dir))
        policy_error(source, std::string(key) + " \"" + dir + "\" must be an absolute path without \"..\"");
    return dir;
}

std::vector<std::string> dir_list(const json& obj, const char* key, const std::vector<std::string>& fallback,
                                  const std::string& source) {
    auto dirs = get_list(obj, key, fallback, source, "");
    for (auto& dir : dirs) {
        while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
        if (!is_clean_absolute(dir))
            policy_error(source, std::string(key) + " entry \"" + dir + "\" must be an absolute path without \"..\"");
    }
    return dirs;
}

std::string normalise_vendor(std::string id, const std::string& source) {
    for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (id.starts_with("0x")) id = id.substr(2);
    bool hex = id.size() == 4;
    for (char c : id) hex = hex && std::isxdigit(static_cast<unsigned char>(c));
    if (!hex) policy_error(source, "vendorIds entry \"" + id + "\" must be four hex digits such as \"15b3\"");
    return id;
}

DeviceRules parse_rules(const json& obj, const char* key, bool masters, const std::string& source) {
    DeviceRules rules;
    auto it = obj.find(key);
    if (it == obj.end()) return rules;
    const std::string where = std::string(key) + ".";
    if (!it->is_object()) policy_error(source, std::string(key) + " must be an object");
    reject_unknown_keys(*it,
                        masters ? std::set<std::string>{"names", "pciAddresses", "vendorIds", "allowUplink"}
                                : std::set<std::string>{"names", "pciAddresses", "vendorIds", "vfsOnly"},
                        source, where);
    rules.names = get_list(*it, "names", {}, source, where);
    rules.pci_addresses = get_list(*it, "pciAddresses", {}, source, where);
    for (auto& pci : rules.pci_addresses)
        for (auto& c : pci) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (auto& id : get_list(*it, "vendorIds", {}, source, where))
        rules.vendor_ids.push_back(normalise_vendor(id, source));
    if (masters)
        rules.allow_uplink = get_bool(*it, "allowUplink", true, source, where);
    else
        rules.vfs_only = get_bool(*it, "vfsOnly", false, source, where);
    return rules;
}

json rules_to_json(const DeviceRules& rules, bool masters) {
    json j = {{"names", rules.names}, {"pciAddresses", rules.pci_addresses}, {"vendorIds", rules.vendor_ids}};
    if (masters)
        j["allowUplink"] = rules.allow_uplink;
    else
        j["vfsOnly"] = rules.vfs_only;
    return j;
}

}  // namespace

ipam::PathLimits NodePolicy::ipam_limits() const {
    ipam::PathLimits limits;
    limits.enforced = true;
    limits.config_dirs = ipam_config_dirs;
    limits.kubeconfig_dirs = kubeconfig_dirs;
    limits.data_dirs = ipam_data_dirs;
    limits.log_dir = log_dir;
    return limits;
}

std::string policy_file_path(const EnvLookup& lookup) {
    if (auto path = lookup(std::string(kPolicyFileEnv).c_str()); path && !path->empty()) return *path;
    return std::string(kDefaultPolicyFile);
}

NodePolicy parse_node_policy(std::string_view text, const std::string& source, KnownModes known_modes) {
    json j;
    try {
        j = parse_json_bounded(text);
    } catch (const std::exception& e) {
        policy_error(source, std::string("is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) policy_error(source, "must be a JSON object");
    reject_unknown_keys(j,
                        {"version", "modes", "devices", "masters", "logDir", "auditLog", "kubeconfigDirs",
                         "ipamConfigDirs", "ipamDataDirs", "deviceInfoDirs", "stateDir", "sysctls"},
                        source, "");
    if (auto v = j.find("version"); v != j.end() && (!v->is_number_integer() || v->get<int>() != 1))
        policy_error(source, "version must be 1");

    NodePolicy p;
    p.source = source;
    if (j.contains("modes")) {
        p.modes = get_list(j, "modes", {}, source, "");
        std::string known;
        for (auto name : known_modes) known += (known.empty() ? "" : ", ") + std::string(name);
        for (const auto& mode : *p.modes)
            if (!known_modes.empty() && std::find(known_modes.begin(), known_modes.end(), mode) == known_modes.end())
                policy_error(source, "modes entry \"" + mode + "\" is not a mode (" + known + ")");
    }
    p.devices = parse_rules(j, "devices", false, source);
    p.masters = parse_rules(j, "masters", true, source);
    p.log_dir = dir_value(j, "logDir", p.log_dir, source);
    p.audit_log = get_string(j, "auditLog", p.log_dir + "/policy.log", source, "");
    if (!p.audit_log.empty() && !base::is_path_inside(p.audit_log, p.log_dir))
        policy_error(source, "auditLog \"" + p.audit_log + "\" must lie inside logDir " + p.log_dir);
    p.kubeconfig_dirs = dir_list(j, "kubeconfigDirs", p.kubeconfig_dirs, source);
    p.ipam_config_dirs = dir_list(j, "ipamConfigDirs", p.ipam_config_dirs, source);
    p.ipam_data_dirs = dir_list(j, "ipamDataDirs", p.ipam_data_dirs, source);
    p.device_info_dirs = dir_list(j, "deviceInfoDirs", p.device_info_dirs, source);
    p.state_dir = dir_value(j, "stateDir", p.state_dir, source);
    if (j.contains("sysctls")) p.sysctls = get_list(j, "sysctls", {}, source, "");
    return p;
}

NodePolicy load_node_policy(const EnvLookup& lookup, KnownModes known_modes) {
    const std::string path = policy_file_path(lookup);
    // The admin's file in the admin's directory: only its last component must not be a symlink
    // (a swapped-in link could point the plugin at a policy the admin never wrote).
    base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd) {
        if (errno == ENOENT) return NodePolicy{};  // no file: the built-in (safe) defaults
        policy_error(path, std::string("cannot be opened: ") + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) policy_error(path, "is not a regular file");
    if (st.st_size > (1 << 20)) policy_error(path, "is larger than 1 MiB");
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) policy_error(path, std::string("cannot be read: ") + std::strerror(n < 0 ? errno : EIO));
        done += static_cast<std::size_t>(n);
    }
    return parse_node_policy(text, path, known_modes);
}

NodePolicy load_node_policy_or_defaults(const EnvLookup& lookup, KnownModes known_modes) {
    try {
        return load_node_policy(lookup, known_modes);
    } catch (const Error&) {
        return NodePolicy{};  // teardown must work even when the admin's file is broken
    }
}

NodePolicy load_node_policy_for(Command command, const EnvLookup& lookup, KnownModes known_modes) {
    const bool strict = command == Command::add || command == Command::check;
    return strict ? load_node_policy(lookup, known_modes) : load_node_policy_or_defaults(lookup, known_modes);
}

json policy_to_json(const NodePolicy& p, KnownModes known_modes) {
    json j = {
        {"source", p.source.empty() ? "built-in defaults (no policy file)" : p.source},
        {"version", 1},
        {"modes", p.modes ? json(*p.modes) : json(std::vector<std::string>(known_modes.begin(), known_modes.end()))},
        {"devices", rules_to_json(p.devices, false)},
        {"masters", rules_to_json(p.masters, true)},
        {"logDir", p.log_dir},
        {"auditLog", p.audit_log},
        {"kubeconfigDirs", p.kubeconfig_dirs},
        {"ipamConfigDirs", p.ipam_config_dirs},
        {"ipamDataDirs", p.ipam_data_dirs},
        {"deviceInfoDirs", p.device_info_dirs},
        {"stateDir", p.state_dir},
        {"builtIn",
         {"never moved into a pod: loopback, a device holding a default route or a global address of the node, "
          "the lower device of a default-route device, a device attached to another live pod",
          "files named by a network configuration only inside logDir / kubeconfigDirs / ipamConfigDirs / "
          "ipamDataDirs / deviceInfoDirs, opened without following symlinks; files 0600, directories 0700"}},
    };
    // Absent = every per-interface key (net.ipv4|ipv6.conf|neigh.IFNAME.*), so the rendering
    // parses back to the same policy.
    if (p.sysctls) j["sysctls"] = *p.sysctls;
    return j;
}

std::string default_policy_file_content(KnownModes known_modes) {
    json j = policy_to_json(NodePolicy{}, known_modes);
    j.erase("source");
    j.erase("builtIn");
    return j.dump(2) + "\n";
}

}  // namespace rdmanet::cni
