// nv-ipam's pools over the API: see pool_api.hpp.
#include "rdmanet/ipam/nvipam/pool_api.hpp"

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/node_identity.hpp"
#include "rdmanet/ipam/kube/response_json.hpp"

namespace rdmanet::ipam::nvipam {

using nlohmann::json;

namespace {

std::string span_of(const Pool& pool, const NodeAllocation& a) {
    return pool.type == PoolType::ippool ? "block " + a.start.str() + "-" + a.end.str() : "subnet " + a.prefix.str();
}

}  // namespace

std::string PoolRef::path() const {
    return "/apis/" + std::string(kGroup) + "/" + std::string(kVersion) + "/namespaces/" + ns + "/" +
           std::string(plural(type)) + "/" + name;
}

json get_pool(kube::KubeApi& api, const PoolRef& ref) {
    const std::string path = ref.path();
    const kube::HttpResponse r = api.call("GET", path);
    if (r.status == 200) return kube::response_object(r, "GET " + path);
    if (r.status == 404) {
        if (kube::object_not_found(kube::parse_status(r.status, r.body)))
            throw IpamError(codes::io_failure, "no " + std::string(kind(ref.type)) + " " + ref.name + " in namespace " +
                                                   ref.ns +
                                                   " (set ipam.poolName to an existing pool, or "
                                                   "ipam.poolNamespace to the pools' namespace)");
        throw IpamError(codes::io_failure,
                        "GET " + path + " at " + api.config().server + ": 404, the API server has no " +
                            std::string(plural(ref.type)) + "." + std::string(kGroup) +
                            " resource: install nv-ipam's CRDs (deploy/crds/nv-ipam.nvidia.com_*.yaml)");
    }
    api.fail("GET " + path, r);
}

std::optional<std::map<std::string, std::string>> node_labels(kube::KubeApi& api, const std::string& node) {
    const std::string path = "/api/v1/nodes/" + node;
    const kube::HttpResponse r = api.call("GET", path);
    if (r.status == 404 && kube::object_not_found(kube::parse_status(r.status, r.body))) return std::nullopt;
    if (r.status != 200) api.fail("GET " + path, r);
    const json o = kube::response_object(r, "GET " + path);
    std::map<std::string, std::string> labels;
    const json md = o.value("metadata", json::object());
    if (md.is_object() && md.contains("labels") && md["labels"].is_object()) {
        for (auto it = md["labels"].begin(); it != md["labels"].end(); ++it)
            if (it->is_string()) labels[it.key()] = it->get<std::string>();
    }
    return labels;
}

Claimed claim_allocation(kube::KubeApi& api, const PoolRef& ref, const std::string& node) {
    if (!kube::valid_node_name(node)) config_error("node name \"" + node + "\" is not a valid Node name");
    bool selector_checked = false;
    for (int attempt = 0;; ++attempt) {
        json object = get_pool(api, ref);
        Pool pool = parse_pool(object, ref.type);
        if (const NodeAllocation* mine = pool.allocation_of(node); mine && valid_allocation(pool, *mine)) {
            if (const NodeAllocation* other = overlapping_allocation(pool, *mine))
                config_error(pool.where() + ": status.allocations: node " + node + "'s " + span_of(pool, *mine) +
                             " overlaps node " + other->node + "'s " + span_of(pool, *other) +
                             ": a block another node holds is not used; correct the pool's status (nv-ipam's "
                             "controller keeps one of the two) before this node hands out addresses");
            return Claimed{pool, *mine, false, std::move(object)};
        }
        if (pool.selector && !selector_checked) {
            const auto labels = node_labels(api, node);
            if (!labels || !matches(*pool.selector, *labels, node))
                config_error(pool.where() + ": node " + node +
                             (labels ? " does not match" : " has no Node object to match") +
                             " spec.nodeSelector: this network's pool is not for this node");
            selector_checked = true;
        }
        const auto next = next_allocation(pool, node);
        if (!next)
            throw IpamError(codes::io_failure, pool.where() + " has no free " +
                                                   (ref.type == PoolType::ippool ? "block" : "subnet") + " for node " +
                                                   node + ": every one is allocated to another node (grow spec." +
                                                   (ref.type == PoolType::ippool ? "subnet" : "cidr") + ")");
        std::vector<NodeAllocation> entries;
        for (const auto& a : pool.allocations)
            if (a.node != node) entries.push_back(a);
        entries.push_back(*next);
        object["status"] = {{"allocations", allocations_json(pool, entries)}};
        const kube::HttpResponse r = api.call("PUT", ref.path() + "/status", object.dump());
        if (r.status == 200 || r.status == 201) {
            pool.allocations = entries;
            return Claimed{pool, *next, true, std::move(object)};
        }
        if (r.status != 409) api.fail("PUT " + ref.path() + "/status (claim for node " + node + ")", r);
        api.backoff(attempt, pool.where() + " changed by other nodes claiming blocks");
    }
}

}  // namespace rdmanet::ipam::nvipam
