// DRANET's profile provider: see provider.hpp.
#include "rdmanet/cni/node/dranet/provider.hpp"

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/node/dranet/answer.hpp"
#include "rdmanet/cni/node/dranet/profile.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/ipam.hpp"

namespace rdmanet::cni::node::dranet {

namespace {

// The IPAM's errors as DRANET's statuses: the caller's config is wrong (400), an address is
// somebody else's or the range is full (409), the datastore cannot answer right now (500: the
// kubelet retries).
[[noreturn]] void rethrow_ipam(const ipam::IpamError& e) {
    switch (e.code) {
    case ipam::codes::invalid_config:
    case ipam::codes::unsupported_field: throw ProviderError(400, e.msg);
    case ipam::codes::address_in_use: throw ProviderError(409, e.msg);
    case ipam::codes::range_full: throw ProviderError(409, e.msg + " (free addresses or widen the profile's range)");
    default: throw ProviderError(500, e.msg);
    }
}

ipam::IpamRequest ipam_request(const Profile& profile, const ProfileRequest& request, const ProviderOptions& options) {
    ipam::IpamRequest r;
    r.config = profile.ipam;
    r.config.store.default_kube = options.default_kube;
    // Node slices: a claim's allocation and release are committed in the node's local store and
    // published by the node agent's next pass, so a claim costs no API request in the steady state.
    r.config.store.defer_slice_publication = true;
    r.network = profile.network;
    r.recorded_network = claim_network(profile.name);
    r.container_id = request.claim_uid;
    r.ifname = request.device.name;
    r.podref = claim_podref(request.claim_uid);
    r.static_ips = request.static_addresses;
    return r;
}

HttpResponse answer(int status, std::string body) { return HttpResponse{status, std::move(body), "application/json"}; }

}  // namespace

std::string claim_podref(const std::string& claim_uid) { return "dranet:" + claim_uid; }
std::string claim_network(const std::string& profile) { return "dranet:" + profile; }

std::vector<std::string> survey_profiles(const std::string& profiles_dir, const NodePolicy& policy,
                                         const std::string& node_name) {
    std::vector<std::string> lines;
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(profiles_dir, ec)) {
        const auto path = entry.path();
        if (path.extension() == ".json" && is_valid_profile_name(path.stem().string()))
            names.push_back(path.stem().string());
    }
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
        try {
            const Profile profile = load_profile(profiles_dir, name, policy, node_name, true);
            if (const auto hazard = whereabouts_hazard(profile)) lines.push_back("refusing claims: " + *hazard);
        } catch (const ProviderError& e) {
            lines.push_back("profile \"" + name + "\" is not usable: " + e.what());
        }
    }
    return lines;
}

ProfileProvider::ProfileProvider(ProviderOptions options, NodePolicy policy)
    : options_(std::move(options)), policy_(std::move(policy)), records_(options_.state_dir) {}

NetworkConfigAnswer ProfileProvider::get_profile_config(const ProfileRequest& request) {
    if (request.profile.empty())
        throw ProviderError(400, "config.profile is empty: name one of the node's rdmanet profiles");
    const Profile profile = load_profile(options_.profiles_dir, request.profile, policy_, options_.node_name, true);
    // Before anything is allocated: an address whereabouts' reconciler would free under the pod.
    if (const auto hazard = whereabouts_hazard(profile)) throw ProviderError(400, *hazard);
    const bool on_kube = profile.ipam.store.datastore == ipam::Datastore::kubernetes || profile.ipam.nv.enabled;
    if (on_kube && profile.ipam.store.kubeconfig.empty() && !options_.default_kube)
        throw ProviderError(400, "profile \"" + profile.name +
                                     "\": its ipam section uses the Kubernetes API but names no kubernetes.kubeconfig, "
                                     "and the provider runs without --kubeconfig or --in-cluster: set one of them");
    ipam::IpamResult result;
    try {
        result = ipam::add(ipam_request(profile, request, options_));
    } catch (const ipam::IpamError& e) {
        rethrow_ipam(e);
    } catch (const Error& e) {
        throw ProviderError(400, e.msg() + (e.details().empty() ? "" : ": " + e.details()));
    }
    std::vector<IpConfig> ips;
    for (const auto& ip : result.ips) ips.push_back(IpConfig{ip.address, ip.gateway, std::nullopt});
    const auto& pr = profile.pod.policy_routing;
    const std::vector<unsigned> tables =
        records_.tables_for(ClaimKey{request.claim_uid, request.device.name}, profile.name,
                            pr && pr->table ? *pr->table : kFirstAutoTable, pr ? ips.size() : 0);
    auto out = answer_for(options_.dranet, plan_answer(profile, ips, result.routes, tables));
    const bool arp_lost = (profile.arp_ignore || profile.arp_announce) && !options_.dranet.has_arp_fields();
    spdlog::info(
        "dranet-provider: claim {} device {} profile {}: {}{}", request.claim_uid, request.device.name, profile.name,
        nlohmann::json(out.addresses).dump(),
        arp_lost ? " (its arp_ignore/arp_announce not sent: DRANET " + options_.dranet.str() + " has no field for them)"
                 : "");
    return out;
}

void ProfileProvider::release_profile_config(const ProfileRequest& request) {
    const ClaimKey key{request.claim_uid, request.device.name};
    const auto record = records_.find(key);
    const std::string profile_name = !request.profile.empty() ? request.profile : record ? record->profile : "";
    if (!profile_name.empty()) {
        try {
            const Profile profile =
                load_profile(options_.profiles_dir, profile_name, policy_, options_.node_name, false);
            ipam::del(ipam_request(profile, request, options_));
        } catch (const ProviderError& e) {
            if (e.status == 500) throw;
            // The profile is gone or unusable: nothing names the pools any more. The claim's
            // record goes; the node agent's claim GC finds the allocation by its owner.
            spdlog::warn("dranet-provider: release of claim {} device {}: {}", request.claim_uid, request.device.name,
                         e.what());
        } catch (const ipam::IpamError& e) {
            throw ProviderError(500, "releasing the claim's addresses: " + e.msg);
        }
    }
    records_.forget(key);
    spdlog::info("dranet-provider: released claim {} device {}", request.claim_uid, request.device.name);
}

HttpResponse ProfileProvider::handle(const HttpRequest& request) {
    const bool get_config = request.path == "/GetProfileConfig";
    const bool release = request.path == "/ReleaseProfileConfig";
    if (request.path == "/health") {
        if (request.method != "GET") return answer(405, error_json("/health takes GET"));
        return answer(200, R"({"cloudProvider":false,"profileProvider":true})"
                           "\n");
    }
    if (!get_config && !release)
        return answer(404, error_json("no endpoint " + request.path.substr(0, 64) +
                                      ": this is a DRANET profile provider (/health, /GetProfileConfig, "
                                      "/ReleaseProfileConfig)"));
    if (request.method != "POST") return answer(405, error_json(request.path + " takes POST"));
    try {
        const ProfileRequest parsed = parse_profile_request(request.body);
        if (get_config) return answer(200, get_profile_config(parsed).to_json().dump() + "\n");
        release_profile_config(parsed);
        return answer(200, "{}\n");
    } catch (const ProviderError& e) {
        if (e.status >= 500) spdlog::error("dranet-provider: {}: {}", request.path, e.what());
        return answer(e.status, error_json(e.what()));
    } catch (const std::exception& e) {
        // Anything else is trouble of this node (a file, memory): temporary from DRANET's view.
        spdlog::error("dranet-provider: {}: {}", request.path, e.what());
        return answer(500, error_json(e.what()));
    }
}

}  // namespace rdmanet::cni::node::dranet
