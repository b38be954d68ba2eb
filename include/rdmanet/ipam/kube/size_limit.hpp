#pragma once
// An object the API server refuses to store because it is too large. etcd refuses a value above
// its --max-request-bytes (1.5 MiB = 1,572,864 bytes by default) and the kube-apiserver relays
// that as HTTP 500 InternalError with the message "etcdserver: request is too large"; the
// apiserver itself refuses a request body above 3 MiB with 413. Both are permanent for that
// write: resending the same object fails the same way, so it is not retried (a 500 otherwise is).
// Pure.
#include <cstddef>
#include <string_view>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/status.hpp"

namespace rdmanet::ipam::kube {

bool object_too_large(const ApiStatus& s);

// The error of an ADD whose write to the single IPPool `pool` (in namespace `ns`, holding
// `entries` allocations) was refused as too large. Code 5 (I/O error: the datastore cannot be
// written), not 11: "try again later" would have the runtime repeat a write that can never
// succeed, and the range still has free addresses, so it is not "range full" either. The fix is a
// configuration change, which the message names.
IpamError pool_too_large(std::string_view pool, std::string_view ns, std::size_t entries);

}  // namespace rdmanet::ipam::kube
