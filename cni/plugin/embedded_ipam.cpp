#include "rdmanet/cni/plugin/embedded_ipam.hpp"

#include <spdlog/spdlog.h>

#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/policy/checks.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/ipam.hpp"

namespace rdmanet::cni {

namespace {

// Static address requests: runtimeConfig.ips > args.cni.ips > CNI_ARGS IP= (the first source
// that has any wins, as the CNI conventions order them).
std::vector<std::string> static_requests(const NetConf& conf, const Environment& env) {
    if (!conf.runtime.ips.empty()) return conf.runtime.ips;
    if (!conf.args_cni_ips.empty()) return conf.args_cni_ips;
    return env.args.ips();
}

template <class Fn>
decltype(auto) translating_errors(Fn&& fn) {
    try {
        return fn();
    } catch (const ipam::AccessDenied& e) {
        // Never an outage: an admin must fix the kubeconfig or the RBAC.
        spdlog::error("rdmanet-ipam: {}", e.msg);
        throw Error(e.code, e.msg);
    } catch (const ipam::IpamError& e) {
        throw Error(e.code, e.msg);
    }
}

// The node policy's limits on the ipam object's file keys (configuration_path, kubeconfig,
// data_dir, log_file), checked before any of those files is opened; refusals are audited.
ipam::PathLimits policed_limits(const NodePolicy& policy) {
    auto limits = policy.ipam_limits();
    limits.on_refusal = [&policy](const std::string& msg) {
        try {
            refuse(policy, ErrorCode::invalid_config, msg);
        } catch (const Error&) {
            // refuse() audits and throws; the IPAM layer throws its own error next.
        }
    };
    return limits;
}

// The network's IPAM configuration as this call sees it: within the policy's limits, and with the
// caller's $NODENAME (the IPAM library reads no environment).
ipam::IpamConfig ipam_config(const NetConf& conf, const Environment& env, const NodePolicy& policy,
                             ipam::Strictness strictness) {
    ipam::IpamConfig config = ipam::load_ipam_config(conf.ipam.raw, strictness, policed_limits(policy));
    config.store.nodename = env.nodename;
    return config;
}

ipam::IpamRequest make_request(const NetConf& conf, const Environment& env, const NodePolicy& policy,
                               ipam::Strictness strictness) {
    ipam::IpamRequest req;
    req.config = ipam_config(conf, env, policy, strictness);
    req.network = conf.name;
    req.container_id = env.container_id;
    req.ifname = env.ifname;
    req.podref = ipam::make_podref(env.args.pod_namespace(), env.args.pod_name(), env.container_id);
    req.static_ips = static_requests(conf, env);
    return req;
}

Result to_result(const NetConf& conf, const ipam::IpamResult& r) {
    Result out;
    out.cni_version = conf.cni_version;
    for (const auto& ip : r.ips) out.ips.push_back(IpConfig{ip.address, ip.gateway, std::nullopt});
    out.routes = r.routes;
    out.dns = r.dns;
    return out;
}

}  // namespace

Result embedded_ipam_add(const NetConf& conf, const Environment& env, const NodePolicy& policy) {
    return translating_errors([&] {
        const auto req = make_request(conf, env, policy, ipam::Strictness::strict);
        const auto result = ipam::add(req);
        for (const auto& ip : result.ips)
            spdlog::info("rdmanet-ipam: {} for {} {}", ip.address.str(), req.podref, env.ifname);
        return to_result(conf, result);
    });
}

void embedded_ipam_del(const NetConf& conf, const Environment& env, const NodePolicy& policy) {
    translating_errors([&] {
        try {
            ipam::del(make_request(conf, env, policy, ipam::Strictness::lenient));
        } catch (const ipam::AccessDenied& e) {
            if (!e.released_locally) throw;  // single-pool mode: nothing was released
            // Node-slice mode released the address locally; the runtime retrying DEL would not
            // fix the credentials, so DEL succeeds and the refusal is logged (and recorded for
            // doctor and the agent's metrics).
            spdlog::error("rdmanet-ipam: {}", e.msg);
            return;
        } catch (const ipam::ReleaseDeferred& e) {
            // Single-pool mode: the API server did not take the release within DEL's budget; it is
            // recorded for the node agent, and the runtime retrying DEL would wait just the same.
            spdlog::error("rdmanet-ipam: {}", e.msg);
            return;
        }
        spdlog::info("rdmanet-ipam: released {} {}", env.container_id, env.ifname);
    });
}

void embedded_ipam_check(const NetConf& conf, const Environment& env, const NodePolicy& policy) {
    translating_errors([&] { ipam::check(make_request(conf, env, policy, ipam::Strictness::strict)); });
}

void embedded_ipam_gc(const NetConf& conf, const Environment& env, const NodePolicy& policy) {
    if (!conf.valid_attachments) return;
    translating_errors([&] {
        std::vector<ipam::AttachmentId> valid;
        for (const auto& a : *conf.valid_attachments) valid.push_back({a.container_id, a.ifname});
        try {
            for (const auto& released :
                 ipam::gc(ipam_config(conf, env, policy, ipam::Strictness::lenient), conf.name, valid))
                spdlog::info("rdmanet-ipam GC: released {} of {} {}", released.ip.str(), released.owner.container_id,
                             released.owner.ifname);
        } catch (const ipam::ReleaseDeferred& e) {
            spdlog::error("rdmanet-ipam GC: {}", e.msg);
        }
    });
}

}  // namespace rdmanet::cni
