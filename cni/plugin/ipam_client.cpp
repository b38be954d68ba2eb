#include "rdmanet/cni/plugin/ipam_client.hpp"

#include <spdlog/spdlog.h>

#include "rdmanet/cni/plugin/embedded_ipam.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/protocol/exec_plugin.hpp"

namespace rdmanet::cni {

namespace {

bool embedded(const NetConf& conf) { return conf.ipam.type == kEmbeddedIpamType; }

// Plugins built with an older CNI library (Debian 12's host-local among them) refuse a 1.1.0
// config with "incompatible CNI versions" although the IPAM exchange of ADD/DEL/CHECK is the same
// in 1.0.0. Retrying once as 1.0.0 lets a 1.1.0 conflist use them; GC and STATUS do not exist
// before 1.1.0, so for those the refusal stands.
bool can_retry_as_1_0_0(const NetConf& conf, Command command, const Error& e) {
    return e.code() == static_cast<int>(ErrorCode::incompatible_version) && conf.cni_version == "1.1.0" &&
           (command == Command::add || command == Command::del || command == Command::check);
}

nlohmann::json exec_ipam(const NetConf& conf, const Environment& env, Command command,
                         std::chrono::milliseconds timeout) {
    try {
        return exec_plugin(conf.ipam.type, command, env, conf.raw, timeout);
    } catch (const Error& e) {
        if (!can_retry_as_1_0_0(conf, command, e)) throw;
        spdlog::info("IPAM {} does not speak 1.1.0; retrying as 1.0.0", conf.ipam.type);
        auto downgraded = conf.raw;
        downgraded["cniVersion"] = "1.0.0";
        return exec_plugin(conf.ipam.type, command, env, downgraded, timeout);
    }
}

}  // namespace

bool has_ipam(const NetConf& conf) { return !conf.ipam.type.empty(); }

Result ipam_add(const NetConf& conf, const Environment& env, const NodePolicy& policy) {
    if (!has_ipam(conf)) return Result{conf.cni_version, {}, {}, {}, {}};
    if (embedded(conf)) return embedded_ipam_add(conf, env, policy);
    auto out = exec_ipam(conf, env, Command::add, kIpamAddTimeout);
    if (!out.is_object()) throw Error(ErrorCode::ipam_failure, "IPAM plugin " + conf.ipam.type + " returned no result");
    auto result = result_from_json(out);
    spdlog::info("IPAM {} allocated {} address(es)", conf.ipam.type, result.ips.size());
    return result;
}

void require_installable_routes(const NetConf& conf, const Result& result) {
    if (auto problem = base::routes_problem(result.routes); !problem.empty())
        throw Error(ErrorCode::invalid_config, "IPAM " + conf.ipam.type + " result: " + problem,
                    "the routes come from the IPAM configuration (ipam.routes)");
}

void ipam_del(const NetConf& conf, const Environment& env, const NodePolicy& policy) {
    if (!has_ipam(conf)) return;
    if (embedded(conf)) return embedded_ipam_del(conf, env, policy);
    exec_ipam(conf, env, Command::del, kIpamDelTimeout);
    spdlog::info("IPAM {} released", conf.ipam.type);
}

void ipam_check(const NetConf& conf, const Environment& env, const NodePolicy& policy) {
    if (!has_ipam(conf)) return;
    if (embedded(conf)) return embedded_ipam_check(conf, env, policy);
    exec_ipam(conf, env, Command::check, kIpamDelTimeout);
}

// GC and STATUS are 1.1.0 verbs. Plugins built before 1.1.0 (Debian 12's host-local) answer them
// with whatever their environment check trips over first ("missing containerID", "unknown
// CNI_COMMAND"), so they are forwarded only to a plugin whose VERSION lists 1.1.0.
bool ipam_speaks_1_1_0(const NetConf& conf, const Environment& env) {
    const auto reply = exec_plugin(conf.ipam.type, Command::version, env, {{"cniVersion", "1.1.0"}}, kIpamDelTimeout);
    if (!reply.is_object() || !reply.contains("supportedVersions") || !reply["supportedVersions"].is_array())
        return false;
    for (const auto& v : reply["supportedVersions"])
        if (v.is_string() && v.get<std::string>() == "1.1.0") return true;
    return false;
}

void ipam_gc(const NetConf& conf, const Environment& env, const NodePolicy& policy) {
    if (!has_ipam(conf)) return;
    if (embedded(conf)) return embedded_ipam_gc(conf, env, policy);
    if (!ipam_speaks_1_1_0(conf, env)) {
        spdlog::info("IPAM {} predates CNI 1.1.0: GC not forwarded", conf.ipam.type);
        return;
    }
    exec_plugin(conf.ipam.type, Command::gc, env, conf.raw, kIpamDelTimeout);
}

void ipam_status(const NetConf& conf, const Environment& env) {
    if (!has_ipam(conf)) return;
    if (embedded(conf)) return;  // in-process: available whenever the plugin runs
    if (!ipam_speaks_1_1_0(conf, env)) return;
    exec_plugin(conf.ipam.type, Command::status, env, conf.raw, kIpamDelTimeout);
}

}  // namespace rdmanet::cni
