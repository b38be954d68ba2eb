#include "sections.hpp"

#include <array>

#include "rdmanet/cni/protocol/value_checks.hpp"
#include "rdmanet/base/ip.hpp"
#include "rdmanet/cni/protocol/result_parse.hpp"
#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

namespace {

constexpr auto kInvalid = ErrorCode::invalid_config;
constexpr std::string_view kMacHint =
    "write six hex octets such as \"0a:58:0a:01:00:05\", not multicast, not all zeros";

// A list of "IP" or "IP/prefix" strings, as runtimeConfig.ips and args.cni.ips carry them.
std::vector<std::string> ip_list(const JsonFields& f, std::string_view key) {
    auto ips = f.strings(key);
    for (const auto& ip : ips)
        if (!base::IpNetwork::parse_address_or_cidr(ip))
            f.invalid(key, "entry " + text::quote(ip) + " is not an IP address or CIDR",
                      "example: \"192.168.100.7/24\"");
    return ips;
}

// The section object `key` of the top level, or nullopt when absent.
std::optional<JsonFields> section(const JsonFields& top, std::string_view key) {
    const auto* object = top.object(key);
    if (!object) return std::nullopt;
    return JsonFields(*object, top.name(key), top.code());
}

}  // namespace

std::optional<std::string> assignable_mac(const JsonFields& f, std::string_view key) {
    auto mac = f.string(key);
    if (!mac) return std::nullopt;
    if (!checks::is_assignable_mac(*mac))
        f.invalid(key, text::quote(*mac) + " is not a usable MAC address: " + std::string(kMacHint));
    return checks::lowercase(*mac);
}

std::optional<std::string> interface_name(const JsonFields& f, std::string_view key) {
    auto name = f.string(key);
    if (!name) return name;
    if (auto problem = ifname_problem(*name); !problem.empty())
        f.invalid(key, text::quote(*name) + " is not a valid interface name: " + problem + " (" +
                           std::string(kIfnameRule) + ")");
    return name;
}

const JsonFields& runtime_config_names() {
    static const nlohmann::json kNoObject = nlohmann::json::object();
    static const JsonFields kNames(kNoObject, "runtimeConfig", kInvalid);
    return kNames;
}

void parse_logging(const JsonFields& top, NetConf& conf, const Attempt& attempt) {
    attempt([&] {
        auto file = top.string("logFile").value_or("");
        if (!file.empty() && !checks::is_safe_absolute_path(file))
            top.invalid("logFile", text::quote(file) + " must be an absolute path without \"..\"");
        conf.log_file = file;
    });
    attempt([&] {
        constexpr std::array<std::string_view, 6> kLevels = {"trace", "debug", "info", "warn", "error", "off"};
        if (auto level = top.string("logLevel")) conf.log_level = one_of(top, "logLevel", *level, kLevels);
    });
}

void parse_runtime_config(const JsonFields& top, NetConf& conf, const Attempt& attempt) {
    std::optional<JsonFields> rc;
    attempt([&] { rc = section(top, "runtimeConfig"); });
    if (!rc) return;
    auto& runtime = conf.runtime;
    attempt([&] { runtime.mac = assignable_mac(*rc, "mac"); });
    attempt([&] { runtime.ips = ip_list(*rc, "ips"); });
    // Kept as given: the modes that take a device (hostdev, sriov) read it.
    attempt([&] { runtime.device_id = rc->string("deviceID"); });
    attempt([&] {
        auto guid = rc->string("infinibandGUID");
        if (guid && !checks::is_guid(*guid))
            rc->invalid("infinibandGUID", text::quote(*guid) +
                                              " is not a GUID: write eight hex octets such as "
                                              "\"c2:11:22:33:44:55:66:77\"");
        if (guid) runtime.infiniband_guid = checks::lowercase(*guid);
    });
    attempt([&] {
        auto file = rc->string("CNIDeviceInfoFile");
        if (file && !checks::is_safe_absolute_path(*file))
            rc->invalid("CNIDeviceInfoFile", text::quote(*file) + " must be an absolute path without \"..\"");
        runtime.device_info_file = file;
    });
}

void parse_args(const JsonFields& top, NetConf& conf, const Attempt& attempt) {
    attempt([&] {
        auto args = section(top, "args");
        if (!args) return;
        auto cni = section(*args, "cni");
        if (cni) conf.args_cni_ips = ip_list(*cni, "ips");
    });
}

void parse_ipam(const JsonFields& top, NetConf& conf, const Attempt& attempt) {
    attempt([&] {
        auto ipam = section(top, "ipam");
        if (!ipam) return;
        auto type = ipam->string("type").value_or("");
        // The type becomes a file name looked up in CNI_PATH; refuse anything that is a path.
        if (!type.empty() && !checks::is_plain_file_name(type))
            ipam->invalid("type", text::quote(type) + " must be the plain file name of an IPAM plugin in CNI_PATH");
        conf.ipam.type = type;
        conf.ipam.raw = *top.get("ipam");
    });
}

void parse_dns(const JsonFields& top, NetConf& conf, const Attempt& attempt) {
    attempt([&] {
        if (const auto* dns = top.get("dns")) conf.dns = parse_dns_at(*dns, "dns", kInvalid);
    });
}

void parse_prev_result(const JsonFields& top, NetConf& conf, const Attempt& attempt, bool required) {
    attempt([&] {
        const auto* prev = top.get("prevResult");
        if (!prev && required)
            top.invalid("prevResult", "is required for CHECK", "the runtime passes the result it cached after ADD");
        if (prev) conf.prev_result = parse_result_at(*prev, "prevResult", kInvalid);
    });
}

void parse_valid_attachments(const JsonFields& top, NetConf& conf, const Attempt& attempt) {
    attempt([&] {
        // Absent stays nullopt (do nothing destructive); present-but-empty is an empty list.
        std::string_view key =
            top.has("cni.dev/valid-attachments") ? "cni.dev/valid-attachments" : "cni.dev/attachments";
        const auto* list = top.array(key);
        if (!list) return;
        std::vector<AttachmentKey> keys;
        for (std::size_t i = 0; i < list->size(); ++i) {
            auto entry = JsonFields::of_object((*list)[i], top.name(key) + "[" + std::to_string(i) + "]", kInvalid);
            auto container_id = entry.string("containerID");
            auto ifname = entry.string("ifname");
            if (!container_id) entry.invalid("containerID", "is required");
            if (!ifname) entry.invalid("ifname", "is required");
            keys.push_back({*container_id, *ifname});
        }
        conf.valid_attachments = std::move(keys);
    });
}

}  // namespace rdmanet::cni
