// rdmanetctl render: network specs -> NetworkAttachmentDefinitions (k8s.cni.cncf.io/v1).
//
// Inputs: the project's own RdmaNetwork (rdmanet.dev/v1alpha1), NVIDIA network-operator's
// HostDeviceNetwork / MacvlanNetwork / IPoIBNetwork (mellanox.com/v1alpha1, for migration), and
// NetworkAttachmentDefinitions themselves (validated, and converted with --ipam). The output is
// validated by the plugin's own parser, so a network that the plugin would refuse at ADD time is
// refused here, with the plugin's message.
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "rdmanet/base/json_fields.hpp"
#include "rdmanet/base/json_limits.hpp"
#include "rdmanet/cni/modes/net_conf.hpp"
#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/translate/render.hpp"
#include "rdmanet/cni/translate/dranet_profile.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/config/pod_settings.hpp"
#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "nv_ipam.hpp"
#include "rdmanet/base/exit_status.hpp"

namespace rdmanet::cni::translate {

namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;

constexpr const char* kOperatorApi = "mellanox.com/v1alpha1";
constexpr const char* kNadApi = "k8s.cni.cncf.io/v1";
constexpr const char* kNadKind = "NetworkAttachmentDefinition";
// What Multus would put in deviceID for a resourceName; only used to validate, never rendered.
constexpr const char* kPlaceholderDeviceId = "0000:00:00.0";

[[noreturn]] void fail(const std::string& where, const std::string& what) {
    throw std::runtime_error(where + ": " + what);
}

// Type errors name the field ("spec.ipam.type must be a string, got 5"), through the typed
// access every JSON reader of the project uses, never nlohmann's own message.
struct RenderRaise {
    std::string where;
    void operator()(std::string message, std::string /*details*/) const { fail(where, message); }
};

// The string member `key` of `object` (named `path`.key), `fallback` when absent, null, or when
// `object` is not a map (its own check reports that).
template <class Json>
std::string string_at(const Json& object, const std::string& key, const std::string& where,
                      const std::string& fallback = "", const std::string& path = "") {
    if (!object.is_object()) return fallback;
    const json* plain = nullptr;
    json converted;
    if constexpr (std::is_same_v<Json, json>) {
        plain = &object;
    } else {  // ordered: only the one member is converted
        converted = json::object();
        if (auto it = object.find(key); it != object.end()) converted[key] = json(*it);
        plain = &converted;
    }
    return base::JsonFields<RenderRaise>(*plain, path, RenderRaise{where}).string(key).value_or(fallback);
}

// Kubernetes object names used in Multus annotations are DNS-1123 labels.
void check_dns_label(const std::string& value, const std::string& what, const std::string& where) {
    static const std::regex kLabel("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
    if (value.size() > 63 || !std::regex_match(value, kLabel))
        fail(where, what + " \"" + value +
                        "\" is not a DNS-1123 label: lower-case letters, digits and '-', at most 63 "
                        "characters, starting and ending with a letter or digit");
}

// The operator's `ipam` is a string holding raw JSON ("" means none); ours may also be an object.
json parse_ipam(const json& spec, const std::string& where) {
    if (!spec.contains("ipam") || spec.at("ipam").is_null()) return json::object();
    const auto& value = spec.at("ipam");
    if (value.is_object()) return value;
    if (!value.is_string()) fail(where, "spec.ipam must be an object or a JSON string");
    const auto& text = value.get_ref<const std::string&>();
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
    auto parsed = base::parse_json_limited(text);
    if (!parsed) fail(where, "spec.ipam is not a JSON object: " + parsed.error);
    if (!parsed.value.is_object()) fail(where, "spec.ipam is not a JSON object: " + text.substr(0, 120));
    return std::move(parsed.value);
}

// metaPlugins: the operator's field is a string that its template pastes into the "plugins"
// list after the main plugin, so it holds plugin objects separated by commas, without the
// brackets. A string that is itself a JSON list ("[{...},{...}]") is accepted too.
std::vector<json> parse_meta_plugins(const json& spec, const std::string& where) {
    if (!spec.contains("metaPlugins") || spec.at("metaPlugins").is_null()) return {};
    const auto& value = spec.at("metaPlugins");
    json list;
    if (value.is_array()) {
        list = value;
    } else if (value.is_string()) {
        const auto& text = value.get_ref<const std::string&>();
        const auto first = text.find_first_not_of(" \t\r\n");
        if (first == std::string::npos) return {};
        auto parsed = base::parse_json_limited(text[first] == '[' ? text : "[" + text + "]");
        if (!parsed) fail(where, "spec.metaPlugins is not a comma-separated list of JSON objects: " + parsed.error);
        list = std::move(parsed.value);
    } else {
        fail(where, "spec.metaPlugins must be a list of plugin objects or the operator's string form");
    }
    std::vector<json> plugins;
    for (const auto& plugin : list) {
        if (!plugin.is_object() || !plugin.contains("type") || !plugin.at("type").is_string())
            fail(where, "every spec.metaPlugins entry must be an object with a \"type\"");
        plugins.push_back(plugin);
    }
    return plugins;
}

// A sysctl value as the kernel receives it: "1" and 1 set the same.
std::string sysctl_text(const json& value) {
    return value.is_string() ? value.get<std::string>() : base::show_json(value);
}

// tuning's sysctl map joins the plugin's own (an RdmaNetwork's spec.sysctl): both are applied to
// the same interface, so neither may replace the other. A key set to two values is refused.
void merge_sysctl(ordered& plugin, const json& tuning_sysctl, const std::string& where) {
    if (!plugin.contains("sysctl")) {
        plugin["sysctl"] = tuning_sysctl;
        return;
    }
    auto& own = plugin["sysctl"];
    if (!own.is_object()) fail(where, "spec.sysctl must be a map of sysctl key to value");
    for (const auto& [key, value] : tuning_sysctl.items()) {
        const auto it = own.find(key);
        if (it == own.end()) {
            own[key] = value;
        } else if (sysctl_text(json(*it)) != sysctl_text(value)) {
            fail(where, "sysctl " + key + " is \"" + sysctl_text(json(*it)) + "\" in spec.sysctl but \"" +
                            sysctl_text(value) + "\" in metaPlugins' tuning: set it in one place");
        }
    }
}

// sbr and tuning chained after the device plugin (network-operator's metaPlugins) do what rdmanet
// does itself with policyRouting and sysctl: they fold into the rdmanet plugin object when every
// key they carry means the same there. One with another key (tuning's mtu or mac, sbr's gateways),
// an sbr with a fixed "table" (sbr then only adds rules and moves no route; rdmanet's fixed table
// holds the attachment's routes), or a tuning with a sysctl rdmanet does not set (any key outside
// the interface's own conf/neigh trees, e.g. net.core.somaxconn, which tuning accepts) stays
// chained as written, like every other meta plugin, so the network keeps doing exactly what it
// did; the result is a conflist only when something stays chained.
std::vector<json> fold_meta_plugins(ordered& plugin, const std::vector<json>& meta, const std::string& where) {
    static const std::set<std::string> kCommon = {"type", "name", "cniVersion"};
    const auto only_keys = [](const json& m, const std::set<std::string>& allowed) {
        for (const auto& [key, value] : m.items())
            if (!kCommon.count(key) && !allowed.count(key)) return false;
        return true;
    };
    // Every entry a key and a value rdmanet's "sysctl" takes (a malformed map folds, and the
    // check below names it).
    const auto rdmanet_sets_all = [](const json& m) {
        if (!m.contains("sysctl") || !m.at("sysctl").is_object()) return true;
        for (const auto& [key, value] : m.at("sysctl").items()) {
            std::string why;
            if (!value.is_string() || !parse_sysctl_key(key, why) || !is_valid_sysctl_value(value.get<std::string>()))
                return false;
        }
        return true;
    };
    std::vector<json> chained;
    bool sbr_folded = false, tuning_folded = false;
    for (const auto& m : meta) {
        const std::string type = m.at("type").get<std::string>();
        // An sbr next to the network's own policyRouting stays chained as written.
        if (type == "sbr" && !sbr_folded && !plugin.contains("policyRouting") && only_keys(m, {"addSourceHints"})) {
            sbr_folded = true;
            ordered routing = ordered::object();
            if (m.contains("addSourceHints")) routing["addSourceHints"] = m.at("addSourceHints");
            plugin["policyRouting"] = routing.empty() ? ordered(true) : routing;
        } else if (type == "tuning" && !tuning_folded && only_keys(m, {"sysctl"}) && rdmanet_sets_all(m)) {
            tuning_folded = true;
            if (!m.contains("sysctl")) continue;  // a tuning that changes nothing
            if (!m.at("sysctl").is_object())
                fail(where, "spec.metaPlugins: tuning's sysctl must be a map of sysctl key to value");
            merge_sysctl(plugin, m.at("sysctl"), where);
        } else {
            chained.push_back(m);
        }
    }
    return chained;
}

// --ipam rdmanet: whereabouts -> rdmanet-ipam, same keys; nv-ipam -> rdmanet-ipam on the same
// pools (poolName, poolType kept; nv-ipam's daemon keys dropped), or with nv_ipam_to_slices node
// slices from its IPPool; the kubeconfig becomes the one `rdmanetctl install` writes.
json convert_ipam(json ipam, const RenderOptions& options, const std::string& network, const std::string& where) {
    if (options.ipam.empty() || ipam.empty()) return ipam;
    if (options.ipam != "rdmanet") fail(where, "--ipam must be \"rdmanet\" (or not given)");
    const std::string type = string_at(ipam, "type", where, "", "spec.ipam");
    if (type == "rdmanet-ipam") return ipam;
    if (type == "nv-ipam" && !options.nv_ipam_to_slices) {
        ipam["type"] = "rdmanet-ipam";
        for (const char* daemon_key : {"daemonSocket", "daemonCallTimeoutSeconds", "confDir", "forcePoolName"})
            ipam.erase(daemon_key);
        ipam["kubernetes"] = {{"kubeconfig", options.ipam_kubeconfig}};
        return ipam;
    }
    if (type == "nv-ipam") {
        try {
            return convert_nv_ipam(ipam, network, options.nv_ipam_pools, options.ipam_kubeconfig);
        } catch (const std::runtime_error& e) {
            fail(where, e.what());
        }
    }
    if (type != "whereabouts")
        fail(where, "--ipam rdmanet converts whereabouts and nv-ipam IPAM, but this network uses \"" + type +
                        "\"; drop --ipam to keep it");
    ipam["type"] = "rdmanet-ipam";
    // The node policy keeps IPAM logs in its logDir (/var/log/rdmanet by default); whereabouts
    // logs anywhere, so its file moves there under the same name.
    if (ipam.contains("log_file") && ipam["log_file"].is_string() && !ipam["log_file"].get<std::string>().empty()) {
        const std::string file = ipam["log_file"].get<std::string>();
        const std::string dir = std::string(kDefaultLogDir) + "/";
        if (file.rfind(dir, 0) != 0) ipam["log_file"] = dir + file.substr(file.find_last_of('/') + 1);
    }
    if (ipam.contains("kubernetes") && ipam["kubernetes"].is_object() && ipam["kubernetes"].contains("kubeconfig"))
        ipam["kubernetes"]["kubeconfig"] = options.ipam_kubeconfig;
    return ipam;
}

std::string with_error_text(const Error& e) { return e.msg() + (e.details().empty() ? "" : " (" + e.details() + ")"); }

// One plugin object -> its config as the plugin receives it from libcni (name and cniVersion
// injected into conflist entries).
void validate_plugin(json plugin, const std::string& cni_version, const std::string& name, const std::string& device_id,
                     bool& found) {
    plugin["cniVersion"] = cni_version;
    plugin["name"] = name;
    const std::string type = string_at(plugin, "type", "plugin");
    // Paths a network may name are limited by the node policy; checked here against the default
    // policy (a node's own policy file may allow more, or less).
    const NodePolicy policy;
    if (type == "rdmanet") {
        found = true;
        const std::string log_file = plugin.value("logFile", json("")).is_string() ? plugin.value("logFile", "") : "";
        if (!log_file.empty() && log_file.rfind(policy.log_dir + "/", 0) != 0)
            throw std::runtime_error("logFile \"" + log_file + "\" is outside " + policy.log_dir +
                                     ", where the default node policy allows logs");
        if (!device_id.empty() && !plugin.contains("deviceID")) plugin["deviceID"] = device_id;
        try {
            (void)parse_net_conf(plugin.dump(), Command::add);
        } catch (const Error& e) {
            throw std::runtime_error(with_error_text(e));
        }
    }
    if (plugin.contains("ipam") && plugin["ipam"].is_object() &&
        string_at(plugin["ipam"], "type", "plugin", "", "ipam") == "rdmanet-ipam") {
        found = true;
        try {
            // Not load_ipam_config: a configuration_path names a file on the node, not here.
            (void)ipam::parse_ipam_config(plugin["ipam"]);
            auto limits = policy.ipam_limits();
            limits.enforced = true;
            limits.on_refusal = nullptr;  // rendering is not a refusal on a node: nothing to audit
            ipam::check_path_limits(plugin["ipam"], limits);
        } catch (const ipam::IpamError& e) {
            throw std::runtime_error(e.msg);
        }
    }
}

// The plugin-side config object (single plugin, or conflist when there are meta plugins).
ordered assemble_config(const std::string& cni_version, const std::string& name, const ordered& plugin,
                        const std::vector<json>& meta) {
    ordered config;
    config["cniVersion"] = cni_version;
    config["name"] = name;
    if (meta.empty()) {
        for (const auto& [key, value] : plugin.items()) config[key] = value;
        return config;
    }
    config["plugins"] = ordered::array({plugin});
    for (const auto& m : meta) config["plugins"].push_back(ordered(m));
    return config;
}

json make_nad(const std::string& name, const std::string& ns, const std::string& resource_name, const ordered& config) {
    json nad = {{"apiVersion", kNadApi}, {"kind", kNadKind}, {"metadata", {{"name", name}, {"namespace", ns}}}};
    if (!resource_name.empty()) nad["metadata"]["annotations"][kResourceNameAnnotation] = resource_name;
    nad["spec"]["config"] = config.dump();
    return nad;
}

// Modes that take a host device (the registry says which) get the capabilities that make Multus
// pass the device and the device-info file path in runtimeConfig.
void default_capabilities(ordered& plugin, const std::string& mode, const std::string& resource_name) {
    if (plugin.contains("capabilities") || resource_name.empty()) return;
    const ModeEntry* entry = find_mode_entry(mode);
    if (entry && entry->takes_host_device()) plugin["capabilities"] = {{"deviceID", true}, {"CNIDeviceInfoFile", true}};
}

struct Meta {
    std::string name, ns, where;
};

Meta read_meta(const json& doc, const std::string& default_ns) {
    const auto& metadata = doc.contains("metadata") ? doc.at("metadata") : json::object();
    std::string kind = string_at(doc, "kind", "document");
    Meta m;
    m.name = string_at(metadata, "name", kind, "", "metadata");
    m.where = kind + " " + (m.name.empty() ? "(unnamed)" : m.name);
    if (m.name.empty()) fail(m.where, "metadata.name is required");
    check_dns_label(m.name, "metadata.name", m.where);
    m.ns = string_at(metadata, "namespace", m.where, default_ns, "metadata");
    return m;
}

json render_operator(const json& doc, const std::string& kind, const RenderOptions& options) {
    const Meta m = read_meta(doc, "default");
    const json spec = doc.value("spec", json::object());
    std::string ns = string_at(spec, "networkNamespace", m.where, "", "spec");
    if (ns.empty()) ns = "default";
    check_dns_label(ns, "spec.networkNamespace", m.where);

    ordered plugin;
    plugin["type"] = "rdmanet";
    std::string resource_name;
    if (kind == "HostDeviceNetwork") {
        plugin["mode"] = "hostdev";
        resource_name = string_at(spec, "resourceName", m.where, "", "spec");
        // The operator prefixes nvidia.com/ when the name has no prefix of its own.
        if (!resource_name.empty() && resource_name.find('/') == std::string::npos)
            resource_name = "nvidia.com/" + resource_name;
    } else if (kind == "MacvlanNetwork") {
        plugin["mode"] = "macvlan";
        if (auto master = string_at(spec, "master", m.where, "", "spec"); !master.empty()) plugin["master"] = master;
        if (auto mode = string_at(spec, "mode", m.where, "", "spec"); !mode.empty()) plugin["macvlanMode"] = mode;
        if (spec.contains("mtu") && !spec["mtu"].is_null()) plugin["mtu"] = spec["mtu"];
    } else {  // IPoIBNetwork
        plugin["mode"] = "ipoib";
        if (auto master = string_at(spec, "master", m.where, "", "spec"); !master.empty()) plugin["master"] = master;
    }
    default_capabilities(plugin, plugin["mode"].get<std::string>(), resource_name);
    auto ipam = convert_ipam(parse_ipam(spec, m.where), options, m.name, m.where);
    if (!ipam.empty()) plugin["ipam"] = ipam;
    const auto chained = fold_meta_plugins(plugin, parse_meta_plugins(spec, m.where), m.where);
    auto config = assemble_config(options.cni_version, m.name, plugin, chained);
    return make_nad(m.name, ns, resource_name, config);
}

json render_own(const json& doc, const RenderOptions& options) {
    const Meta m = read_meta(doc, "default");
    const json spec = doc.value("spec", json::object());
    if (!spec.is_object()) fail(m.where, "spec must be an object");
    std::string ns = string_at(spec, "networkNamespace", m.where, "default", "spec");
    check_dns_label(ns, "spec.networkNamespace", m.where);
    const std::string resource_name = string_at(spec, "resourceName", m.where, "", "spec");
    if (!resource_name.empty() && resource_name.find('/') == std::string::npos)
        fail(m.where, "spec.resourceName \"" + resource_name + "\" needs its device plugin prefix, e.g. \"nvidia.com/" +
                          resource_name + "\"");
    const std::string cni_version = string_at(spec, "cniVersion", m.where, options.cni_version, "spec");
    if (auto type = string_at(spec, "type", m.where, "", "spec"); !type.empty() && type != "rdmanet")
        fail(m.where, "spec.type must be \"rdmanet\" (or left out), got \"" + type + "\"");

    ordered plugin;
    plugin["type"] = "rdmanet";
    if (spec.contains("mode")) plugin["mode"] = spec["mode"];
    // Every other spec key is a plugin key, passed as written: the plugin's parser validates it.
    for (const auto& [key, value] : spec.items()) {
        if (key == "networkNamespace" || key == "resourceName" || key == "cniVersion" || key == "ipam" ||
            key == "metaPlugins" || key == "type" || key == "mode" || key == "name")
            continue;
        plugin[key] = value;
    }
    default_capabilities(plugin, spec.value("mode", json("")).is_string() ? spec.value("mode", "") : "", resource_name);
    auto ipam = convert_ipam(parse_ipam(spec, m.where), options, m.name, m.where);
    if (!ipam.empty()) plugin["ipam"] = ipam;
    const auto chained = fold_meta_plugins(plugin, parse_meta_plugins(spec, m.where), m.where);
    auto config = assemble_config(cni_version, m.name, plugin, chained);
    return make_nad(m.name, ns, resource_name, config);
}

// An existing NAD: validated, and converted when --ipam asks for it.
json render_nad(const json& doc, const RenderOptions& options) {
    const Meta m = read_meta(doc, "default");
    const auto config_text = string_at(doc.value("spec", json::object()), "config", m.where, "", "spec");
    if (config_text.empty()) fail(m.where, "spec.config is empty (a NAD without config is not rendered)");
    auto parsed = base::parse_json_limited<ordered>(config_text);
    if (!parsed) fail(m.where, "spec.config: " + parsed.error);
    ordered config = std::move(parsed.value);
    if (!config.is_object()) fail(m.where, "spec.config is not a JSON object");
    if (!options.ipam.empty()) {
        const std::string network = string_at(config, "name", m.where, m.name, "spec.config");
        auto convert = [&](ordered& plugin) {
            if (plugin.contains("ipam") && plugin["ipam"].is_object())
                plugin["ipam"] = ordered(convert_ipam(json(plugin["ipam"]), options, network, m.where));
        };
        if (config.contains("plugins") && config["plugins"].is_array())
            for (auto& plugin : config["plugins"]) convert(plugin);
        else
            convert(config);
    }
    json nad = doc;
    nad["spec"]["config"] = config.dump();
    return nad;
}

std::string resource_of(const json& nad) {
    const auto& md = nad.at("metadata");
    if (!md.contains("annotations") || !md["annotations"].contains(kResourceNameAnnotation)) return "";
    const auto& value = md["annotations"][kResourceNameAnnotation];
    return value.is_string() ? value.get<std::string>() : "";
}

}  // namespace

void validate_cni_config(const json& config, const std::string& device_id) {
    if (!config.is_object()) throw std::runtime_error("the CNI config is not a JSON object");
    const std::string cni_version = string_at(config, "cniVersion", "config");
    const std::string name = string_at(config, "name", "config");
    bool found = false;
    if (config.contains("plugins")) {
        if (!config["plugins"].is_array() || config["plugins"].empty())
            throw std::runtime_error("\"plugins\" must be a non-empty list");
        for (const auto& plugin : config["plugins"]) {
            if (!plugin.is_object()) throw std::runtime_error("every \"plugins\" entry must be an object");
            validate_plugin(plugin, cni_version, name, device_id, found);
        }
    } else {
        validate_plugin(config, cni_version, name, device_id, found);
    }
    if (!found) throw std::runtime_error("no plugin of type \"rdmanet\" and no \"rdmanet-ipam\" IPAM in this config");
}

json render_network(const json& doc, const RenderOptions& options) {
    if (!doc.is_object()) throw std::runtime_error("a network document must be a map");
    const std::string api = string_at(doc, "apiVersion", "document");
    const std::string kind = string_at(doc, "kind", "document");
    json nad;
    if (api == kOperatorApi && (kind == "HostDeviceNetwork" || kind == "MacvlanNetwork" || kind == "IPoIBNetwork"))
        nad = render_operator(doc, kind, options);
    else if (api == kNetworkApiVersion && kind == kNetworkKind)
        nad = render_own(doc, options);
    else if (api == kNadApi && kind == kNadKind)
        nad = render_nad(doc, options);
    else
        throw std::runtime_error("unsupported kind \"" + kind + "\" (apiVersion \"" + api + "\"): use " +
                                 kNetworkApiVersion + " " + kNetworkKind + ", " + kOperatorApi +
                                 " HostDeviceNetwork/MacvlanNetwork/IPoIBNetwork, or a " + kNadKind);
    if (options.validate) {
        const std::string where = kind + " " + nad["metadata"]["name"].get<std::string>();
        // The config text is this function's own output, within the limits like its parts.
        auto parsed = base::parse_json_limited(nad["spec"]["config"].get<std::string>());
        if (!parsed) fail(where, "spec.config: " + parsed.error);
        const json& config = parsed.value;
        try {
            validate_cni_config(config, resource_of(nad).empty() ? "" : kPlaceholderDeviceId);
        } catch (const std::runtime_error& e) {
            fail(where, e.what());
        }
    }
    return nad;
}

std::vector<json> render_documents(const std::string& text, const RenderOptions& given) {
    // A kubectl List (what `kubectl get -o yaml` prints) holds the objects in items.
    std::vector<json> docs;
    for (const auto& doc : yaml_documents_to_json(text)) {
        if (doc.is_object() && string_at(doc, "kind", "document") == "List" && doc.contains("items") &&
            doc["items"].is_array())
            docs.insert(docs.end(), doc["items"].begin(), doc["items"].end());
        else
            docs.push_back(doc);
    }
    // nv-ipam's IPPools are inputs of the conversion, not networks.
    RenderOptions options = given;
    std::vector<json> networks;
    for (auto& doc : docs) {
        if (doc.is_object() && string_at(doc, "apiVersion", "document") == kNvIpamApi &&
            string_at(doc, "kind", "document") == "IPPool") {
            const auto name =
                string_at(doc.value("metadata", json::object()), "name", "nv-ipam IPPool", "", "metadata");
            if (name.empty()) throw std::runtime_error("an nv-ipam IPPool without metadata.name");
            options.nv_ipam_pools[name] = doc;
        } else {
            networks.push_back(std::move(doc));
        }
    }
    std::vector<json> nads;
    for (const auto& doc : networks) nads.push_back(render_network(doc, options));
    if (nads.empty()) throw std::runtime_error("no network documents in the input");
    return nads;
}

int render(const std::string& file, const RenderOptions& options, std::ostream& out, std::ostream& err) {
    return base::exit_status_of(err, "rdmanetctl render", [&] {
        if (options.output != "yaml" && options.output != "json" && options.output != "profile")
            throw std::runtime_error("--output must be yaml, json or profile");
        std::string text;
        if (file == "-") {
            text.assign(std::istreambuf_iterator<char>(std::cin), {});
        } else {
            std::ifstream in(file, std::ios::binary);
            if (!in) throw std::runtime_error("cannot read " + file);
            text.assign(std::istreambuf_iterator<char>(in), {});
        }
        const auto nads = render_documents(text, options);
        if (options.output == "profile") {
            // One network: the profile itself (DIR/<profile>.json); several: {"<name>.json": profile}.
            if (nads.size() == 1) {
                out << dranet_profile_of(nads.front()).dump(2) << '\n';
            } else {
                json files = json::object();
                for (const auto& nad : nads)
                    files[nad["metadata"].value("name", "") + ".json"] = dranet_profile_of(nad);
                out << files.dump(2) << '\n';
            }
            return 0;
        }
        if (options.output == "json") {
            if (nads.size() == 1) {
                out << nads.front().dump(2) << '\n';
            } else {
                json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", nads}};
                out << list.dump(2) << '\n';
            }
            return 0;
        }
        for (std::size_t i = 0; i < nads.size(); ++i) out << (i ? "---\n" : "") << nad_yaml(nads[i]);
        return 0;
    });
}

}  // namespace rdmanet::cni::translate
