#include "rdmanet/cni/plugin/ipam_plugin.hpp"

#include <ostream>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/plugin/embedded_ipam.hpp"
#include "rdmanet/cni/logging/logging.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/plugin/skel.hpp"

namespace rdmanet::cni {

namespace {

// whereabouts' log levels (debug, verbose, error, panic) mapped onto ours.
std::string spdlog_level(const std::string& level) {
    if (level.empty() || level == "debug") return "debug";
    if (level == "verbose") return "info";
    if (level == "panic") return "critical";
    return level;
}

void handle(const EnvLookup& lookup, const Environment& env, const std::string& input, std::ostream& out) {
    const NetConf conf = parse_ipam_plugin_conf(input, env.command);
    const auto& ipam = conf.ipam.raw;
    // Read before the IPAM config is parsed (logging comes first): a value of another type is
    // left to that parse, which refuses it naming the field (ipam.log_file must be a string).
    const auto text_member = [&](const char* key) {
        const auto it = ipam.is_object() ? ipam.find(key) : ipam.end();
        return it != ipam.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const std::string log_file = text_member("log_file");
    const std::string log_level = text_member("log_level");
    // Stand-alone, the IPAM applies the same node policy as the plugin (it runs as root too).
    const bool strict = env.command == Command::add || env.command == Command::check;
    const NodePolicy policy = load_node_policy_for(env.command, lookup, /*known_modes=*/{});
    setup_policed_logging(policy, "ipam.log_file", log_file, spdlog_level(log_level),
                          conf.name + " " + env.container_id + " " + env.ifname, strict);
    switch (env.command) {
    case Command::add:
        out << result_to_json(embedded_ipam_add(conf, env, policy), conf.cni_version).dump() << '\n';
        break;
    case Command::del: embedded_ipam_del(conf, env, policy); break;
    case Command::check: embedded_ipam_check(conf, env, policy); break;
    case Command::gc: embedded_ipam_gc(conf, env, policy); break;
    case Command::status:
    case Command::version:
    case Command::none: break;
    }
}

}  // namespace

int run_ipam_plugin(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err) {
    return run_skel(lookup, in, out, err, "rdmanet-ipam: whereabouts-compatible range IPAM",
                    [&lookup](const Environment& env, const std::string& input, std::ostream& out) {
                        handle(lookup, env, input, out);
                    });
}

}  // namespace rdmanet::cni
