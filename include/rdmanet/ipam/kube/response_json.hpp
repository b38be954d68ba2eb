#pragma once
// An API server's answer read as a JSON object: the one parser of response bodies for every
// caller of the Kubernetes API (pools, node slices, nv-ipam's pools). It sits beside the HTTP
// client, not in base/, because it speaks in the client's response type and the IPAM's error codes.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "rdmanet/base/json_limits.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/http.hpp"

namespace rdmanet::ipam::kube {

// The JSON limits for an API server's body: the nesting limit of every JSON input, and for the
// size the bound the HTTP client already enforced while reading it (one object or a list,
// RequestOptions::max_body): a list of a large cluster's pods is legitimately past the 16 MiB
// that bounds every other JSON text, and was refused unread if it was past its own limit.
inline base::JsonLimits api_body_limits(const HttpResponse& r) {
    return base::JsonLimits{base::kMaxJsonDepth, std::max(base::kMaxJsonBytes, r.body.size())};
}

// The body of `r` as a JSON object, within api_body_limits (base/json_limits.hpp). Throws
// io_failure naming `action` ("GET <path>") when it is not JSON or not an object (a proxy's HTML
// page, a truncated answer), or past a limit (saying which).
inline nlohmann::json response_object(const HttpResponse& r, std::string_view action) {
    auto parsed = base::parse_json_limited(r.body, api_body_limits(r));
    if (!parsed.value.is_object())
        throw IpamError(codes::io_failure, std::string(action) +
                                               ": the API server answered with a body that is not a JSON object" +
                                               (parsed ? std::string() : " (" + parsed.error + ")"));
    return std::move(parsed.value);
}

}  // namespace rdmanet::ipam::kube
