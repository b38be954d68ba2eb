#include "rdmanet/cni/config/config.hpp"

#include "rdmanet/cni/protocol/value_checks.hpp"
#include "sections.hpp"
#include "rdmanet/cni/protocol/json_fields.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/cni/protocol/version.hpp"
#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

namespace {

constexpr auto kInvalid = ErrorCode::invalid_config;

std::string supported_versions_text() {
    // Go's %q of a []string, which is what runtimes have seen in this message for years.
    std::string list = "[";
    for (auto version : kSupportedVersions) list += (list.size() > 1 ? " \"" : "\"") + std::string(version) + "\"";
    return list + "]";
}

std::string read_cni_version(const JsonFields& top) {
    auto version = top.string("cniVersion").value_or("");
    if (!is_supported_version(version))
        throw Error(ErrorCode::incompatible_version, "incompatible CNI versions",
                    (version.empty() ? std::string("config has no cniVersion") : "config is " + text::quote(version)) +
                        ", plugin supports " + supported_versions_text());
    return version;
}

// The verbs added after 0.3.0 only exist for configs of their version (skel's gates).
void check_verb_allowed(std::string_view version, Command command) {
    std::string_view needed;
    if (command == Command::check) needed = "0.4.0";
    if (command == Command::gc || command == Command::status) needed = "1.1.0";
    if (needed.empty() || compare_versions(version, needed) >= 0) return;
    throw Error(ErrorCode::incompatible_version, "config version does not allow " + std::string(command_name(command)),
                "config is " + text::quote(version) + ", " + std::string(command_name(command)) + " needs cniVersion " +
                    std::string(needed) + " or later");
}

std::string read_name(const JsonFields& top) {
    auto name = top.string("name");
    if (!name || name->empty()) throw Error(kInvalid, "missing network name", "set \"name\" to the network's name");
    if (!is_valid_network_name(*name))
        top.invalid("name", text::quote(*name) +
                                " is invalid: must start with a letter or digit and contain only "
                                "letters, digits, '_', '.' and '-' (at most 253 characters)");
    return *name;
}

}  // namespace

namespace {

// The keys every caller reads; `plugin_keys` adds the plugin's own (logging, dns, prevResult,
// rdma), which the stand-alone IPAM plugin must ignore: its config is another plugin's.
NetConf parse_conf(std::string_view stdin_bytes, Command command, bool plugin_keys) {
    NetConf conf;
    conf.raw = parse_json_bounded(stdin_bytes);
    if (!conf.raw.is_object())
        throw Error(ErrorCode::decode_failure,
                    std::string("network configuration must be a JSON object, got ") + conf.raw.type_name());
    const JsonFields top(conf.raw, "", kInvalid);

    // Same order as skel: version, verb gate, name; then our own keys.
    conf.cni_version = read_cni_version(top);
    check_verb_allowed(conf.cni_version, command);
    conf.name = read_name(top);

    // ADD and CHECK act on the config, so they get every error; the others only tear down or
    // report and must work from whatever can be read.
    const bool strict = command == Command::add || command == Command::check;
    const Attempt attempt{strict};
    attempt([&] { conf.type = top.string("type").value_or(""); });
    if (plugin_keys) parse_logging(top, conf, attempt);
    parse_runtime_config(top, conf, attempt);
    parse_args(top, conf, attempt);
    parse_ipam(top, conf, attempt);
    if (plugin_keys) {
        parse_dns(top, conf, attempt);
        parse_prev_result(top, conf, attempt, command == Command::check);
        parse_rdma(top, conf, attempt);
        parse_pod_settings(top, conf, attempt);
    }
    parse_valid_attachments(top, conf, Attempt{command == Command::gc});
    return conf;
}

}  // namespace

NetConf parse_common_conf(std::string_view stdin_bytes, Command command) {
    return parse_conf(stdin_bytes, command, /*plugin_keys=*/true);
}

NetConf parse_ipam_plugin_conf(std::string_view stdin_bytes, Command command) {
    return parse_conf(stdin_bytes, command, /*plugin_keys=*/false);
}

std::optional<std::string> NetConf::requested_mac(const CniArgs& args) const {
    if (runtime.mac) return runtime.mac;
    if (auto mac = args.mac()) {
        if (!checks::is_assignable_mac(*mac))
            throw Error(ErrorCode::invalid_environment,
                        "CNI_ARGS MAC=" + text::quote(*mac) +
                            " is not a usable MAC address: write six hex octets such as "
                            "\"0a:58:0a:01:00:05\", not multicast, not all zeros",
                        "CNI_ARGS");
        return checks::lowercase(*mac);
    }
    const ModeSettings* own = settings.get_any();
    return own ? own->own_mac() : std::nullopt;
}

std::string reply_version(std::string_view stdin_bytes) {
    try {
        auto j = parse_json_bounded(stdin_bytes);
        if (!j.is_object()) return std::string(kLatestVersion);
        auto it = j.find("cniVersion");
        if (it == j.end() || !it->is_string()) return std::string(kLatestVersion);
        auto version = it->get<std::string>();
        bool plausible = !version.empty() && version.size() <= 16;
        for (char c : version) plausible = plausible && ((c >= '0' && c <= '9') || c == '.');
        return plausible ? version : std::string(kLatestVersion);
    } catch (const Error&) {
        return std::string(kLatestVersion);
    }
}

}  // namespace rdmanet::cni
