// DRANET's profile-provider JSON: see wire.hpp.
#include "rdmanet/cni/node/dranet/wire.hpp"

#include <algorithm>
#include <cctype>

#include "rdmanet/base/json_fields.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/protocol/json.hpp"

namespace rdmanet::cni::node::dranet {

namespace {

[[noreturn]] void bad_request(const std::string& message, const std::string& details = "") {
    throw ProviderError(400, details.empty() ? message : message + ": " + details);
}

bool is_name_char(unsigned char c) { return std::isalnum(c) || c == '.' || c == '_' || c == '-'; }

// The claim's UID: DRANET sends it as "claim_uid"; a DRANET that sends the whole ResourceClaim
// ("claim": {"metadata": {"uid": ...}, ...}) names it there. Either place serves; the claim is
// keyed by that UID alone. An empty string counts as absent (a Go struct without omitempty).
template <typename Fields>
std::string claim_uid_of(const Fields& top) {
    const std::string flat = top.string("claim_uid").value_or("");
    std::string nested;
    if (const auto claim = top.child("claim"))
        if (const auto metadata = claim->child("metadata")) nested = metadata->string("uid").value_or("");
    if (flat.empty() && nested.empty())
        bad_request(
            "request.claim_uid is missing",
            "DRANET sends {\"claim_uid\": ...} (or the ResourceClaim as {\"claim\": {\"metadata\": {\"uid\": ...}}})");
    if (!flat.empty() && !nested.empty() && flat != nested)
        bad_request("request.claim_uid " + base::show_json(flat) + " and request.claim.metadata.uid " +
                    base::show_json(nested) + " name different claims");
    const std::string& uid = flat.empty() ? nested : flat;
    if (!is_valid_claim_uid(uid))
        bad_request(std::string(flat.empty() ? "request.claim.metadata.uid " : "request.claim_uid ") +
                    base::show_json(uid) + " is not a UID (letters, digits, '-')");
    return uid;
}

}  // namespace

bool is_valid_claim_uid(std::string_view uid) {
    return !uid.empty() && uid.size() <= 128 &&
           std::all_of(uid.begin(), uid.end(), [](unsigned char c) { return std::isalnum(c) || c == '-'; });
}

bool is_valid_device_name(std::string_view name) {
    return !name.empty() && name.size() <= 253 && name != "." && name != ".." && name.front() != '.' &&
           std::all_of(name.begin(), name.end(), is_name_char);
}

ProfileRequest parse_profile_request(std::string_view body) {
    nlohmann::json j;
    try {
        j = parse_json_bounded(body);
    } catch (const Error& e) {
        bad_request("request body is not valid JSON", e.msg() + (e.details().empty() ? "" : " (" + e.details() + ")"));
    }
    const auto raise = [](const std::string& message, const std::string& details) { bad_request(message, details); };
    const auto top = base::JsonFields<decltype(raise)>::of_object(j, "request", raise);
    ProfileRequest req;
    const auto device = top.child("device");
    if (!device) bad_request("request.device is missing", "DRANET sends {\"device\": {\"name\": ...}}");
    req.device.name = device->string("name").value_or("");
    req.device.pci_address = device->string("pci_address").value_or("");
    req.device.mac_address = device->string("mac_address").value_or("");
    req.claim_uid = claim_uid_of(top);
    if (req.device.name.empty()) bad_request("request.device.name is missing");
    if (!is_valid_device_name(req.device.name))
        bad_request("request.device.name " + base::show_json(req.device.name) +
                    " is not a device name (letters, digits, '.', '_', '-', at most 253)");
    if (const auto config = top.child("config")) {
        req.profile = config->string("profile").value_or("");
        if (const auto iface = config->child("interface")) {
            if (const auto* addresses = iface->get("addresses")) {
                if (!addresses->is_array())
                    bad_request("config.interface.addresses must be a list of CIDR strings, got " +
                                base::show_json(*addresses));
                for (const auto& a : *addresses) {
                    if (!a.is_string())
                        bad_request("config.interface.addresses must hold CIDR strings, got " + base::show_json(a));
                    req.static_addresses.push_back(a.get<std::string>());
                }
            }
        }
    }
    return req;
}

std::string profile_request_json(const ProfileRequest& request) {
    nlohmann::json device = {{"name", request.device.name}};
    if (!request.device.pci_address.empty()) device["pci_address"] = request.device.pci_address;
    if (!request.device.mac_address.empty()) device["mac_address"] = request.device.mac_address;
    nlohmann::json config = nlohmann::json::object();
    if (!request.profile.empty()) config["profile"] = request.profile;
    if (!request.static_addresses.empty()) config["interface"] = {{"addresses", request.static_addresses}};
    return nlohmann::json{{"device", device}, {"claim_uid", request.claim_uid}, {"config", config}}.dump();
}

nlohmann::json NetworkConfigAnswer::to_json() const {
    nlohmann::json iface = nlohmann::json::object();
    if (!addresses.empty()) iface["addresses"] = addresses;
    if (arp_ignore) iface["arpIgnore"] = *arp_ignore;
    if (arp_announce) iface["arpAnnounce"] = *arp_announce;
    nlohmann::json out = {{"interface", iface}};
    if (!routes.empty()) {
        auto& list = out["routes"] = nlohmann::json::array();
        for (const auto& r : routes) {
            nlohmann::json o = {{"destination", r.destination}};
            if (!r.gateway.empty()) o["gateway"] = r.gateway;
            if (!r.source.empty()) o["source"] = r.source;
            if (r.scope) o["scope"] = r.scope;
            if (r.table) o["table"] = r.table;
            list.push_back(std::move(o));
        }
    }
    if (!rules.empty()) {
        auto& list = out["rules"] = nlohmann::json::array();
        for (const auto& r : rules) {
            nlohmann::json o = {{"source", r.source}, {"table", r.table}};
            if (r.priority) o["priority"] = r.priority;
            list.push_back(std::move(o));
        }
    }
    return out;
}

std::string error_json(const std::string& message) {
    return nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace rdmanet::cni::node::dranet
