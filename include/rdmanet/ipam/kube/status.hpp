#pragma once
// Kubernetes `Status` error bodies -> IpamError with a message that says what to fix. Pure.
#include <string>
#include <string_view>

#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::ipam::kube {

struct ApiStatus {
    long http = 0;
    std::string reason;  // "NotFound", "AlreadyExists", "Conflict", "Invalid", ... ("" if no Status body)
    std::string message;
    std::string details_name;  // set for an object that is missing/conflicting, "" for a missing resource
    std::string details_kind;
};

// Reads a Status body (any other body: reason "", message = the first 200 bytes of it).
ApiStatus parse_status(long http_status, std::string_view body);

// 404 for an object (details name the object) vs 404 for the resource type itself (the CRD is
// not installed: no details, or a plain "404 page not found").
bool object_not_found(const ApiStatus& s);
bool resource_missing(const ApiStatus& s);

// The error for a failed request. `action`: "GET ippools/blue-10.0.0.0-24"; `source`: where the
// credentials came from ("kubeconfig /etc/..."); `server`: the API URL.
//   401 -> io_failure: credentials rejected, token expired or not valid
//   403 -> io_failure: RBAC, names the verbs and resources the identity needs
//   404 on the resource -> io_failure: whereabouts' CRDs not installed
//   429/5xx -> try_again; anything else -> io_failure with the server's message
IpamError status_error(std::string_view action, const ApiStatus& s, std::string_view server, std::string_view source);

}  // namespace rdmanet::ipam::kube
