// Objects refused as too large: see size_limit.hpp.
#include "rdmanet/ipam/kube/size_limit.hpp"

#include <string>

namespace rdmanet::ipam::kube {

bool object_too_large(const ApiStatus& s) {
    if (s.http == 413) return true;
    return s.http == 500 && s.message.find("request is too large") != std::string::npos;
}

IpamError pool_too_large(std::string_view pool, std::string_view ns, std::size_t entries) {
    return IpamError(
        codes::io_failure,
        "IPPool " + std::string(pool) + " in namespace " + std::string(ns) +
            " cannot grow: the API server "
            "refused the write as too large (etcdserver: request is too large; etcd stores at most 1.5 MiB "
            "per object) at " +
            std::to_string(entries) +
            " allocations. Set \"node_slice_size\" in the ipam "
            "configuration (e.g. \"/26\": one small IPPool per node slice) or split the range into smaller "
            "ranges; retrying does not help");
}

}  // namespace rdmanet::ipam::kube
