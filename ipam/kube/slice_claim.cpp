// Node slices over the API: see slice_claim.hpp.
#include "rdmanet/ipam/kube/slice_claim.hpp"

#include <algorithm>

#include "rdmanet/ipam/kube/wire.hpp"
#include "rdmanet/ipam/kube/response_json.hpp"

namespace rdmanet::ipam::kube {

using nlohmann::json;

bool patch_node_slice_pool(KubeApi& api, const SliceScope& scope, const json& ops) {
    const std::string path = object_path(scope.ns, kNodeSlicePools, scope.pool_name);
    const HttpResponse r = api.call("PATCH", path, ops.dump(), kJsonPatch, RequestOptions{kMetadataOnly, true});
    if (r.status == 200) return true;
    if (r.status == 422 || r.status == 409) return false;
    if (r.status == 404 && object_not_found(parse_status(r.status, r.body))) return false;
    api.fail("PATCH " + path, r);
}

std::optional<NodeSlicePool> read_node_slice_pool(KubeApi& api, const SliceScope& scope, const Range& parent) {
    const std::string path = object_path(scope.ns, kNodeSlicePools, scope.pool_name);
    const HttpResponse r = api.call("GET", path);
    if (r.status == 200)
        return parse_node_slice_pool(response_object(r, "GET " + path), parent.cidr, scope.slice_prefix);
    if (r.status == 404 && object_not_found(parse_status(r.status, r.body))) return std::nullopt;
    if (r.status == 404) {
        throw IpamError(codes::io_failure,
                        "GET " + path + " at " + api.config().server +
                            ": 404, the API server has no nodeslicepools resource: install the "
                            "NodeSlicePool CRD (deploy/crds/whereabouts.cni.cncf.io_nodeslicepools.yaml) "
                            "to use node_slice_size");
    }
    api.fail("GET " + path, r);
}

NodeSlicePool read_or_create_node_slice_pool(KubeApi& api, const SliceScope& scope, const Range& parent) {
    for (int attempt = 0;; ++attempt) {
        if (auto pool = read_node_slice_pool(api, scope, parent)) return std::move(*pool);
        const std::string path = collection_path(scope.ns, kNodeSlicePools);
        const HttpResponse r = api.call(
            "POST", path, new_node_slice_pool(scope.ns, scope.pool_name, parent.cidr, scope.slice_prefix).dump());
        if (r.status == 201 || r.status == 200) {
            return parse_node_slice_pool(response_object(r, "POST " + path), parent.cidr, scope.slice_prefix);
        }
        if (r.status != 409) api.fail("POST " + path + " (create NodeSlicePool " + scope.pool_name + ")", r);
        if (attempt >= 3) api.backoff(attempt, "NodeSlicePool " + scope.pool_name + " keeps being created and deleted");
    }
}

base::IpNetwork claim_slice(KubeApi& api, const SliceScope& scope, const Range& parent,
                            const std::vector<base::IpNetwork>& unusable) {
    for (int attempt = 0;; ++attempt) {
        const NodeSlicePool pool = read_or_create_node_slice_pool(api, scope, parent);
        for (const auto& mine : pool.slices_of(scope.node)) {
            if (std::find(unusable.begin(), unusable.end(), mine) == unusable.end()) return mine;
        }
        const auto slice = free_slice(pool, parent, unusable);
        if (!slice) throw range_exhausted(scope.pool_name, parent, scope.slice_prefix, scope.node);
        if (patch_node_slice_pool(api, scope, claim_patch(pool, scope.node, *slice))) {
            return *slice;
        }
        api.backoff(attempt, "NodeSlicePool " + scope.pool_name + " changed by other nodes claiming slices");
    }
}

bool release_slice(KubeApi& api, const SliceScope& scope, const Range& parent, const base::IpNetwork& slice) {
    for (int attempt = 0;; ++attempt) {
        const auto pool = read_node_slice_pool(api, scope, parent);
        if (!pool || pool->holder(slice) != scope.node) return false;
        if (patch_node_slice_pool(api, scope, release_patch(*pool, scope.node, slice))) return true;
        api.backoff(attempt, "NodeSlicePool " + scope.pool_name + " changed while releasing " + slice.str());
    }
}

}  // namespace rdmanet::ipam::kube
