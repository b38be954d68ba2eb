// A NetworkAttachmentDefinition as a DRANET provider profile: see dranet_profile.hpp.
#include "rdmanet/cni/translate/dranet_profile.hpp"

#include <stdexcept>
#include <string>

namespace rdmanet::cni::translate {

using nlohmann::json;

json dranet_profile_of(const json& nad) {
    const std::string name = nad.value("metadata", json::object()).value("name", "");
    const auto text = nad.value("spec", json::object()).value("config", "");
    const json config = json::parse(text, nullptr, false);
    if (!config.is_object()) throw std::runtime_error(name + ": spec.config is not a JSON object");
    // A conflist: the rdmanet plugin in it.
    json plugin = config;
    if (config.contains("plugins") && config["plugins"].is_array()) {
        plugin = json();
        for (const auto& p : config["plugins"])
            if (p.is_object() && p.value("type", "") == "rdmanet") plugin = p;
        if (plugin.is_null()) throw std::runtime_error(name + ": no plugin of type rdmanet in the conflist");
    }
    const json ipam = plugin.value("ipam", json::object());
    if (ipam.value("type", "") != "rdmanet-ipam")
        throw std::runtime_error(name + ": the profile needs rdmanet's IPAM (ipam.type is \"" + ipam.value("type", "") +
                                 "\"): render with --ipam rdmanet");
    json profile = {{"network", config.value("name", name)}, {"ipam", ipam}};
    profile["ipam"].erase("type");
    if (plugin.contains("policyRouting")) profile["policyRouting"] = plugin["policyRouting"];
    if (plugin.contains("sysctl") && plugin["sysctl"].is_object()) {
        for (const auto& [key, value] : plugin["sysctl"].items()) {
            if (key != "net.ipv4.conf.IFNAME.arp_ignore" && key != "net.ipv4.conf.IFNAME.arp_announce")
                throw std::runtime_error(name + ": sysctl." + key +
                                         " has no DRANET field (a profile takes only arp_ignore and arp_announce)");
            profile["sysctl"][key] = value;
        }
    }
    return profile;
}

}  // namespace rdmanet::cni::translate
