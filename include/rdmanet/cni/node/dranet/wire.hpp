#pragma once
// DRANET's profile-provider wire (kubernetes-sigs/dranet pkg/cloudprovider/webhook and
// pkg/apis/types.go), as plain values: the request of GetProfileConfig/ReleaseProfileConfig and
// the NetworkConfig the provider answers with. Pure: JSON in, JSON out, no I/O.
//
//   request:  {"device": {"name", "pci_address", "mac_address"}, "claim_uid", "config": NetworkConfig}
//             (the claim's UID may instead come as "claim": {"metadata": {"uid"}}, the whole
//             ResourceClaim, which a later DRANET may send; other members are ignored)
//   answer:   {"interface": {"addresses": [CIDR], "arpIgnore", "arpAnnounce"},
//              "routes": [{"destination", "gateway", "source", "scope", "table"}],
//              "rules": [{"priority", "source", "destination", "table"}]}
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmanet::cni::node::dranet {

// An answer other than 200: the HTTP status DRANET acts on and the message it shows the user.
struct ProviderError : std::runtime_error {
    int status;
    ProviderError(int status_, const std::string& message) : std::runtime_error(message), status(status_) {}
};

struct DeviceIds {
    std::string name;  // DRANET's device name; the IPAM attachment's interface name
    std::string pci_address;
    std::string mac_address;
};

struct ProfileRequest {
    DeviceIds device;
    std::string claim_uid;
    std::string profile;                        // config.profile
    std::vector<std::string> static_addresses;  // config.interface.addresses, as written
};

// Throws ProviderError(400) naming the member when the body is not this shape: malformed JSON, a
// member of the wrong type, a missing device.name or claim UID (claim_uid, else
// claim.metadata.uid; both given and different is refused too), a claim UID or device name with
// characters outside [A-Za-z0-9._-] (they key files and datastore entries). config.profile may
// be empty here: GetProfileConfig refuses that, a release without one is answered 200.
ProfileRequest parse_profile_request(std::string_view body);

// The request's JSON as DRANET sends it (members left out when empty): what the node agent's claim
// GC posts to /ReleaseProfileConfig, so that a release has one implementation (the provider's).
std::string profile_request_json(const ProfileRequest& request);

bool is_valid_claim_uid(std::string_view uid);
bool is_valid_device_name(std::string_view name);

// RT_SCOPE_LINK: DRANET takes only 0 (universe, needs a gateway) and 253 (link).
inline constexpr unsigned kScopeLink = 253;

struct RouteConfig {
    std::string destination;  // CIDR ("0.0.0.0/0" for a default route)
    std::string gateway;      // "" = on-link (scope link)
    std::string source;       // preferred source, "" = none
    unsigned scope = 0;
    unsigned table = 0;  // 0 = main
    friend bool operator==(const RouteConfig&, const RouteConfig&) = default;
};

struct RuleConfig {
    unsigned priority = 0;
    std::string source;  // "10.0.0.5/32"
    unsigned table = 0;
    friend bool operator==(const RuleConfig&, const RuleConfig&) = default;
};

struct NetworkConfigAnswer {
    std::vector<std::string> addresses;  // "10.0.0.5/24"
    std::optional<int> arp_ignore;
    std::optional<int> arp_announce;
    std::vector<RouteConfig> routes;
    std::vector<RuleConfig> rules;

    nlohmann::json to_json() const;
};

// {"error": message}: the body of every non-200 answer.
std::string error_json(const std::string& message);

}  // namespace rdmanet::cni::node::dranet
