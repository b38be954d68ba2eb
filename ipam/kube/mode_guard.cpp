// One mode per range: see mode_guard.hpp.
#include "rdmanet/ipam/kube/mode_guard.hpp"

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/core/range.hpp"
#include "rdmanet/ipam/kube/node_slices.hpp"
#include "rdmanet/ipam/kube/wire.hpp"
#include "rdmanet/base/json_limits.hpp"
#include "rdmanet/ipam/kube/response_json.hpp"

namespace rdmanet::ipam::kube {

using nlohmann::json;

namespace {

bool missing(const HttpResponse& r) { return r.status == 404; }  // the object, or the whole resource (no CRD)

bool overlap(const base::IpNetwork& a, const base::IpNetwork& b) {
    return a.contains(b.first()) || b.contains(a.first());
}

}  // namespace

void guard_slices_against_single_pool(KubeApi& api, const std::string& ns, const PoolKey& single,
                                      const std::string& nsp_name) {
    const std::string path = object_path(ns, kPools, single.name());
    for (int attempt = 0;; ++attempt) {
        const HttpResponse r = api.call("GET", path);
        if (missing(r)) return;
        if (r.status != 200) api.fail("GET " + path, r);
        const PoolObject pool = parse_pool_body(r.body, single.network_name);
        if (pool.dump.pool.range != single.range) return;  // another range's object of that name
        if (!pool.dump.allocations.empty()) {
            const auto& [offset, owner] = *pool.dump.allocations.begin();
            Range range;
            range.cidr = single.range;
            config_error("range " + single.range.str() + " is in use in single-pool mode: IPPool " + single.name() +
                         " in namespace " + ns + " holds " + std::to_string(pool.dump.allocations.size()) +
                         " allocation(s) (" + range.address_at(offset).str() + " for " + owner.podref +
                         "), which node slices (NodeSlicePool " + nsp_name +
                         ") would hand out again. To switch this network to node_slice_size: delete its pods (their "
                         "DEL empties the IPPool; `rdmanetctl reconcile` releases those of pods already gone), "
                         "check that `rdmanetctl pool show " +
                         single.name() +
                         "` lists no allocation, then the next ADD switches; or give node slices a new range");
        }
        // Empty: deleted, so that a node still in single-pool mode must create it again, which
        // finds the NodeSlicePool and refuses. The precondition keeps an ADD landing meanwhile.
        const json options = {{"kind", "DeleteOptions"},
                              {"apiVersion", "v1"},
                              {"preconditions", {{"resourceVersion", pool.resource_version}}}};
        const HttpResponse d = api.call("DELETE", path, options.dump());
        if (d.status == 200 || d.status == 202 || missing(d)) return;
        if (d.status != 409) api.fail("DELETE " + path, d);
        api.backoff(attempt, "IPPool " + single.name() + " changed while node slices took its range over");
    }
}

void guard_single_pool_against_slices(KubeApi& api, const std::string& ns, const PoolKey& single,
                                      const std::string& nsp_name) {
    const std::string path = object_path(ns, kNodeSlicePools, nsp_name);
    const HttpResponse r = api.call("GET", path);
    if (missing(r)) return;
    if (r.status != 200) api.fail("GET " + path, r);
    const auto nsp = parse_stored_node_slice_pool(base::parse_json_limited(r.body, api_body_limits(r)).value);
    if (nsp && !overlap(nsp->range, single.range)) return;  // the same name for another range
    config_error("range " + single.range.str() + " is divided into node slices: NodeSlicePool " + nsp_name +
                 " in namespace " + ns +
                 " (node_slice_size) exists, and one IPPool for the whole range would hand "
                 "out addresses the nodes' slices hold. To switch this network back to a single pool: delete its pods, "
                 "check that `rdmanetctl pool slices` shows no used address on any node, delete NodeSlicePool " +
                 nsp_name + " and its slice IPPools (" + nsp_name +
                 "-<node>-<slice>), then ADD again; or keep "
                 "node_slice_size in this network's configuration");
}

}  // namespace rdmanet::ipam::kube
