// The node agent's claim GC for the DRANET profile provider: see claim_gc.hpp.
#include "rdmanet/cni/node/dranet/claim_gc.hpp"

#include <stdexcept>

#include "rdmanet/cni/node/dranet/wire.hpp"
#include "rdmanet/cni/node/unix_http_client.hpp"
#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/api.hpp"
#include "rdmanet/ipam/kube/http_wire.hpp"

namespace rdmanet::cni::node::dranet {

namespace {

constexpr const char* kGroupPath = "/apis/resource.k8s.io";

std::set<std::string> claim_uids_of(const std::map<ClaimKey, ClaimRecord>& records) {
    std::set<std::string> uids;
    for (const auto& [key, record] : records) uids.insert(key.claim_uid);
    return uids;
}

// A request's failure as the round's skip reason: 401/403 are the credentials' (AccessDenied).
GcSkip skip_of(const ipam::IpamError& e, GcSkip otherwise) {
    return dynamic_cast<const ipam::AccessDenied*>(&e) ? GcSkip::credentials : otherwise;
}

}  // namespace

const char* to_string(GcSkip reason) {
    switch (reason) {
    case GcSkip::none: return "none";
    case GcSkip::discovery: return "discovery";
    case GcSkip::list: return "list";
    case GcSkip::credentials: return "credentials";
    case GcSkip::provider: return "provider";
    }
    return "unknown";
}

std::optional<std::string> choose_resource_version(const nlohmann::json& api_group) {
    if (!api_group.is_object()) return std::nullopt;
    std::set<std::string> served;
    if (const auto it = api_group.find("versions"); it != api_group.end() && it->is_array())
        for (const auto& v : *it)
            if (v.is_object() && v.contains("version") && v["version"].is_string())
                served.insert(v["version"].get<std::string>());
    for (const char* wanted : {"v1", "v1beta2", "v1beta1"})
        if (served.contains(wanted)) return std::string(wanted);
    if (const auto it = api_group.find("preferredVersion"); it != api_group.end() && it->is_object())
        if (const auto v = it->find("version"); v != it->end() && v->is_string() && !v->get<std::string>().empty())
            return v->get<std::string>();
    if (!served.empty()) return *served.begin();
    return std::nullopt;
}

std::set<std::string> parse_claim_uids(std::string_view list_body) {
    nlohmann::json j;
    try {
        j = parse_json_bounded(list_body);
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("the ResourceClaim list is not JSON: ") + e.what());
    }
    if (!j.is_object() || !j.contains("items") || !j["items"].is_array())
        throw std::runtime_error("the ResourceClaim list has no items array");
    if (j.contains("metadata") && j["metadata"].is_object() && j["metadata"].value("continue", "") != "")
        throw std::runtime_error("the ResourceClaim list is incomplete (the server paginated it)");
    std::set<std::string> uids;
    for (const auto& item : j["items"]) {
        const auto md = item.is_object() ? item.find("metadata") : item.end();
        if (!item.is_object() || md == item.end() || !md->is_object() || !md->contains("uid") ||
            !(*md)["uid"].is_string() || (*md)["uid"].get<std::string>().empty())
            throw std::runtime_error("the ResourceClaim list holds an item without metadata.uid");
        uids.insert((*md)["uid"].get<std::string>());
    }
    return uids;
}

std::vector<ClaimKey> claims_to_release(const std::map<ClaimKey, ClaimRecord>& recorded,
                                        const std::set<std::string>& live) {
    std::vector<ClaimKey> out;
    for (const auto& [key, record] : recorded)
        if (!live.contains(key.claim_uid)) out.push_back(key);
    return out;
}

ClaimGcReport collect_claims(const ipam::kube::KubeConfig& config, const ClaimGcOptions& options) {
    ClaimGcReport report;
    std::map<ClaimKey, ClaimRecord> recorded;
    try {
        // Read before the list is asked for (claim_gc.hpp: why a new claim is never released).
        auto records = read_claim_records(options.state_dir);
        if (!records || records->empty()) return report;
        recorded = std::move(*records);
    } catch (const std::exception& e) {
        report.ran = true;
        report.skipped = GcSkip::provider;
        report.error = std::string("reading the provider's claim records: ") + e.what();
        return report;
    }
    report.ran = true;
    report.held = claim_uids_of(recorded).size();

    std::set<std::string> live;
    try {
        ipam::kube::KubeApi api(config, ipam::kube::Deadline::in(options.api_budget));
        try {
            const auto r = api.call("GET", kGroupPath);
            if (r.status == 404) {
                report.skipped = GcSkip::discovery;
                report.error = "the API server does not serve resource.k8s.io (DRA): no claim can be checked";
                return report;
            }
            if (r.status != 200) api.fail(std::string("GET ") + kGroupPath, r);
            const auto version = choose_resource_version(nlohmann::json::parse(r.body, nullptr, false));
            if (!version) {
                report.skipped = GcSkip::discovery;
                report.error = "GET " + std::string(kGroupPath) + " named no served version";
                return report;
            }
            report.version = *version;
        } catch (const ipam::IpamError& e) {
            report.skipped = skip_of(e, GcSkip::discovery);
            report.error = "discovering resource.k8s.io: " + e.msg;
            return report;
        }
        try {
            const std::string path = std::string(kGroupPath) + "/" + report.version + "/resourceclaims";
            const auto r = api.call("GET", path, {}, "application/json",
                                    ipam::kube::RequestOptions{{}, false, ipam::kube::kMaxListBody});
            if (r.status != 200) api.fail("GET " + path, r);
            live = parse_claim_uids(r.body);
        } catch (const ipam::IpamError& e) {
            report.skipped = skip_of(e, GcSkip::list);
            report.error = "listing ResourceClaims: " + e.msg;
            return report;
        } catch (const std::exception& e) {
            report.skipped = GcSkip::list;
            report.error = "listing ResourceClaims: " + std::string(e.what());
            return report;
        }
    } catch (const ipam::IpamError& e) {  // the client refused the configuration
        report.skipped = GcSkip::discovery;
        report.error = "connecting to the API server: " + e.msg;
        return report;
    }

    for (const auto& key : claims_to_release(recorded, live)) {
        ProfileRequest request;
        request.claim_uid = key.claim_uid;
        request.device.name = key.device;
        request.profile = recorded[key].profile;
        const auto reply = unix_http_request(options.socket_path, "POST", "/ReleaseProfileConfig",
                                             profile_request_json(request), options.release_timeout);
        if (reply.status == 0) {
            // The provider is down or stuck: the rest waits for the next round.
            report.skipped = GcSkip::provider;
            report.error = "the DRANET provider on " + options.socket_path + " did not answer: " + reply.error;
            break;
        }
        if (reply.status != 200) {
            report.failures.push_back("claim " + key.claim_uid + " device " + key.device + ": " +
                                      std::to_string(reply.status) + " " + reply.body.substr(0, 512));
            continue;
        }
        report.released.push_back(key);
    }
    try {
        const auto after = read_claim_records(options.state_dir);
        report.held = after ? claim_uids_of(*after).size() : 0;
    } catch (const std::exception&) {
        // Unreadable now: the count read before the round stays.
    }
    return report;
}

}  // namespace rdmanet::cni::node::dranet
