#pragma once
// An API server's answer read as a JSON object: the one parser of response bodies for every
// caller of the Kubernetes API (pools, node slices, nv-ipam's pools). It sits beside the HTTP
// client, not in base/, because it speaks in the client's response type and the IPAM's error codes.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/http.hpp"

namespace rdmanet::ipam::kube {

// The body of `r` as a JSON object. Throws io_failure naming `action` ("GET <path>") when it is
// not JSON or not an object (a proxy's HTML page, a truncated answer).
inline nlohmann::json response_object(const HttpResponse& r, std::string_view action) {
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object())
        throw IpamError(codes::io_failure,
                        std::string(action) + ": the API server answered with a body that is not a JSON object");
    return j;
}

}  // namespace rdmanet::ipam::kube
