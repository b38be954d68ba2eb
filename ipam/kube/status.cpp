// Status mapping: see status.hpp.
#include "rdmanet/ipam/kube/status.hpp"

#include <nlohmann/json.hpp>
#include "rdmanet/base/json_limits.hpp"

namespace rdmanet::ipam::kube {

ApiStatus parse_status(long http_status, std::string_view body) {
    ApiStatus s;
    s.http = http_status;
    auto j = base::parse_json_limited(body).value;
    if (j.is_object() && j.value("kind", "") == "Status") {
        s.reason = j.value("reason", "");
        s.message = j.value("message", "");
        if (auto d = j.find("details"); d != j.end() && d->is_object()) {
            s.details_name = d->value("name", "");
            s.details_kind = d->value("kind", "");
        }
        return s;
    }
    std::string text(body.substr(0, 200));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    s.message = text;
    return s;
}

bool object_not_found(const ApiStatus& s) { return s.http == 404 && !s.details_name.empty(); }
bool resource_missing(const ApiStatus& s) { return s.http == 404 && s.details_name.empty(); }

IpamError status_error(std::string_view action, const ApiStatus& s, std::string_view server, std::string_view source) {
    const std::string where = std::string(action) + " at " + std::string(server);
    const std::string said = s.message.empty() ? std::string() : " (server: " + s.message + ")";
    switch (s.http) {
    case 401:
        return IpamError(codes::io_failure, "Kubernetes API " + std::string(server) + " rejected the credentials of " +
                                                std::string(source) + " (401 Unauthorized" +
                                                (s.message.empty() ? std::string() : ", server: " + s.message) +
                                                "): the token has expired or is not valid, or the client "
                                                "certificate is not trusted; renew the credentials in that file");
    case 403:
        return IpamError(codes::io_failure,
                         where + ": 403 Forbidden" + said + "; the identity of " + std::string(source) +
                             " needs get, list, create, update, patch and delete on ippools and "
                             "overlappingrangeipreservations (whereabouts.cni.cncf.io) in the pool namespace");
    case 404:
        if (resource_missing(s)) {
            return IpamError(codes::io_failure,
                             where + ": 404, the API server has no such resource" + said +
                                 ": whereabouts' CRDs (ippools and overlappingrangeipreservations, group "
                                 "whereabouts.cni.cncf.io/v1alpha1) are not installed in the cluster");
        }
        return IpamError(codes::io_failure, where + ": not found" + said);
    default: break;
    }
    const int code = (s.http == 429 || (s.http >= 500 && s.http <= 599)) ? codes::try_again : codes::io_failure;
    return IpamError(code,
                     where + ": HTTP " + std::to_string(s.http) + (s.reason.empty() ? "" : " " + s.reason) + said);
}

}  // namespace rdmanet::ipam::kube
