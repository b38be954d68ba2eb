// Verb dispatch and the steps shared by every backend: netns handles, IPAM, addresses, state,
// results. Every step of ADD pushes its undo (the data flow is in docs/architecture.md).
#include "rdmanet/cni/plugin/plugin.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/modes/net_conf.hpp"
#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"
#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/modes/rdma/roce_gids.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/base/failpoint.hpp"
#include "rdmanet/cni/plugin/ipam_client.hpp"
#include "rdmanet/cni/pod/pod_plan.hpp"
#include "rdmanet/cni/logging/logging.hpp"
#include "rdmanet/cni/pod/interface_setup.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/policy/checks.hpp"
#include "rdmanet/cni/plugin/skel.hpp"
#include "rdmanet/cni/protocol/version.hpp"
#include "rdmanet/cni/plugin/call_metrics.hpp"
#include "rdmanet/cni/state/sandbox.hpp"
#include "rdmanet/cni/plugin/teardown.hpp"
#include "rdmanet/netns/error.hpp"

namespace rdmanet::cni {

namespace {

using netns::NetNamespace;
using netns::Rtnl;

NetNamespace open_pod_netns(const std::string& path) {
    switch (netns::probe_netns(path)) {
    case netns::NetnsStatus::missing:
        throw Error(ErrorCode::invalid_environment, "CNI_NETNS \"" + path + "\" does not exist",
                    "the pod's network namespace is gone or the path is wrong");
    case netns::NetnsStatus::not_nsfs:
        throw Error(ErrorCode::invalid_environment, "CNI_NETNS \"" + path + "\" is not a network namespace");
    case netns::NetnsStatus::ok: break;
    }
    return NetNamespace::open(path);
}

// DEL: nullopt when the pod netns is empty, gone or no longer nsfs (nothing left to undo in it).
std::optional<NetNamespace> open_pod_netns_if_alive(const std::string& path) {
    if (path.empty() || netns::probe_netns(path) != netns::NetnsStatus::ok) return std::nullopt;
    try {
        return NetNamespace::open(path);
    } catch (const netns::KernelError& e) {
        spdlog::info("pod netns {} unusable ({}): treated as gone", path, e.what());
        return std::nullopt;
    }
}

std::unique_ptr<Rtnl> rtnl_in(const NetNamespace& ns) {
    return netns::in_netns(ns, [] { return std::make_unique<Rtnl>(); });
}

// One plugin call: the parsed config and environment, and everything the steps use beyond them,
// passed down explicitly (the node policy is loaded once per call, never cached in a global).
struct Call {
    const NetConf& conf;
    const Environment& env;
    const NodePolicy& policy;
    const StateStore& states;
    const netns::Sysfs& sysfs;
    const KernelServices& services;

    // The same call for another attachment of the same network (GC of a stale one).
    Call with_env(const Environment& other) const { return Call{conf, other, policy, states, sysfs, services}; }
};

// The one place a verb's Kernel is built: the host namespace and an rtnetlink socket in it, the
// pod namespace the caller opened (none for a DEL whose pod is gone) and a socket inside it, and
// the services the caller injected. Owns the handles the Kernel refers to.
class VerbKernel {
public:
    VerbKernel(const Call& call, const NetNamespace& host_ns, std::optional<NetNamespace> pod_ns)
        : pod_ns_(std::move(pod_ns)),
          pod_(pod_ns_ ? rtnl_in(*pod_ns_) : nullptr),
          kernel_{host_ns, host_, pod_ns_ ? &*pod_ns_ : nullptr, pod_.get(), call.sysfs, call.services} {}
    VerbKernel(const VerbKernel&) = delete;
    VerbKernel& operator=(const VerbKernel&) = delete;

    Kernel& kernel() { return kernel_; }

private:
    Rtnl host_;
    std::optional<NetNamespace> pod_ns_;
    std::unique_ptr<Rtnl> pod_;
    Kernel kernel_;
};

// Our own contribution to the result: one interface, the IPAM's addresses on it and its routes.
Result own_result(const NetConf& conf, const Environment& env, const PodLink& link, const Result& ipam) {
    Result r;
    r.cni_version = conf.cni_version;
    r.interfaces.push_back(Interface{env.ifname, link.mac, link.mtu, env.netns, "", link.pci_id});
    for (auto ip : ipam.ips) {
        ip.interface = 0;
        r.ips.push_back(ip);
    }
    r.routes = ipam.routes;
    r.dns = conf.dns.empty() ? ipam.dns : conf.dns;
    return r;
}

// Chained use: the previous plugins' result with ours appended (interface indexes shifted).
Result merge_into_prev(const NetConf& conf, const Result& own) {
    if (!conf.prev_result) return own;
    Result merged = *conf.prev_result;
    merged.cni_version = conf.cni_version;
    const int offset = static_cast<int>(merged.interfaces.size());
    merged.interfaces.insert(merged.interfaces.end(), own.interfaces.begin(), own.interfaces.end());
    for (auto ip : own.ips) {
        if (ip.interface) *ip.interface += offset;
        merged.ips.push_back(ip);
    }
    merged.routes.insert(merged.routes.end(), own.routes.begin(), own.routes.end());
    if (!own.dns.empty()) merged.dns = own.dns;
    return merged;
}

// DEL and GC go through every step and report all failures at the end as one "try again" error
// (the skel logs it), so that one stuck step never leaks the others.
void throw_if_any(const std::vector<std::string>& failures, const std::string& prefix) {
    if (failures.empty()) return;
    std::string msg = prefix;
    for (std::size_t i = 0; i < failures.size(); ++i) msg += (i ? "; " : "") + failures[i];
    throw Error(ErrorCode::try_again, msg);
}

// The attachment state ADD starts from: who and where, and what the node agent needs to undo
// the attachment if the runtime never sends DEL (the netns identity, the config, CNI_ARGS).
AttachmentState new_attachment_state(const NetConf& conf, const Environment& env, const NetNamespace& pod_ns) {
    AttachmentState state;
    state.network = conf.name;
    state.container_id = env.container_id;
    state.ifname = env.ifname;
    state.mode = conf.mode;
    state.netns = env.netns;
    state.ipam_type = conf.ipam.type;
    const auto identity = netns_identity_of_fd(pod_ns.fd());
    state.netns_dev = identity.dev;
    state.netns_inode = identity.inode;
    state.netconf = conf.raw;
    state.cni_args = env.cni_args_raw;
    state.cni_path = env.path;
    state.nodename = env.nodename;
    return state;
}

void cmd_add(const Call& call, std::ostream& out) {
    const NetConf& conf = call.conf;
    const Environment& env = call.env;
    const StateStore& store = call.states;
    const auto host_ns = NetNamespace::current();
    auto opened_pod_ns = open_pod_netns(env.netns);
    if (opened_pod_ns.same_as(host_ns))
        throw Error(ErrorCode::invalid_netns, "CNI_NETNS " + env.netns + " is the plugin's own network namespace",
                    "the runtime must call the plugin from the host namespace");
    VerbKernel verb_kernel(call, host_ns, std::move(opened_pod_ns));
    Kernel& kernel = verb_kernel.kernel();
    const NetNamespace& pod_ns = *kernel.pod_ns;
    Rtnl* const pod = kernel.pod;
    if (pod->link_by_name(env.ifname))
        throw Error(ErrorCode::device_busy, "interface " + env.ifname + " already exists in " + env.netns,
                    "choose another interface name for this network");
    check_pod_settings(conf.pod, env.ifname, call.policy);

    AttachmentState state = new_attachment_state(conf, env, pod_ns);

    // Refused before anything changes: an rdma.deviceName the pod's RDMA namespace already has.
    rdma_device_name_precheck(conf, pod_ns, kernel.services.rdma);

    // Everything an undo step refers to is declared before the Rollback, which unwinds in its
    // destructor (after the locals declared below it are gone). The pod-side record is filled in
    // by the pod setup below; its undo reads it.
    PodSetupRecord recorded;
    Rollback rollback;
    rollback.push("remove attachment state", [&] { store.remove(conf.name, env.container_id, env.ifname); });
    const Result ipam = ipam_add(conf, env, call.policy);
    rollback.push("release IPAM", [&] { ipam_del(conf, env, call.policy); });
    require_installable_routes(conf, ipam);  // before the pod gets anything
    base::failpoint(base::Failpoint::add_after_ipam);

    const AddRequest req{conf, env, call.policy, store, kernel, rollback, state, [&] {
                             store.save(state);
                             base::failpoint(base::Failpoint::add_after_state_saved);
                         }};
    const PodLink link = mode_entry(conf.mode).add(req);
    base::failpoint(base::Failpoint::add_after_move);
    // A DPDK VF has no netdev in the pod: its addresses are reported, not applied.
    // Rules outlive the link the rollback removes: undone from what was recorded, even when the
    // setup failed half-way.
    rollback.push("undo pod routing and sysctls", [&] {
        if (!recorded.empty()) undo_pod_setup(pod_ns, *pod, env.ifname, recorded);
    });
    if (!link.userspace) {
        configure_pod_interface(PodInterfaceRequest{pod_ns, *pod, link.index, env.ifname, ipam, 0, conf.pod,
                                                    conf.ipam.type == kEmbeddedIpamType, [&](const PodSetupRecord& r) {
                                                        if (r.empty()) return;
                                                        recorded = r;
                                                        state.pod_setup = r.to_json();
                                                        store.save(state);
                                                        base::failpoint(base::Failpoint::add_after_pod_record);
                                                    }});
    }
    base::failpoint(base::Failpoint::add_after_configure);
    // Last: the netdev move and its configuration can make a driver delete or re-create the RDMA
    // device moved earlier, so ownership is only known now.
    rdma_isolation_verify_owned(req);
    // The pod owns the RDMA device (exclusive mode): RoCE v2 GIDs of its addresses in place.
    if (!link.userspace) roce_gids_add(req, interface_addresses(ipam, 0));

    const Result own = own_result(conf, env, link, ipam);
    state.result = result_to_json(own, kLatestVersion);
    state.complete = true;
    store.save(state);
    base::failpoint(base::Failpoint::add_before_commit);
    rollback.commit();
    out << result_to_json(merge_into_prev(conf, own), conf.cni_version).dump() << '\n';
}

void cmd_del(const Call& call) {
    const NetConf& conf = call.conf;
    const Environment& env = call.env;
    const StateStore& store = call.states;
    const auto state = store.load(conf.name, env.container_id, env.ifname);
    std::vector<std::string> failures;

    // IPAM first: a failure later must never leak the address.
    try {
        ipam_del(conf, env, call.policy);
    } catch (const Error& e) {
        // An IPAM configuration that is invalid or refused by the node policy fails every retry
        // the same way. Without attachment state nothing was set up under it (ADD allocates
        // under the same config and policy), so it must not keep the pod in Terminating.
        if (is_config_error(e) && !state) {
            const std::string line = "DEL " + env.container_id + " " + env.ifname + ": IPAM release skipped (" +
                                     e.msg() + "): nothing is recorded for this attachment";
            spdlog::warn("{}", line);
            audit_line(call.policy, line);
        } else {
            failures.push_back("IPAM release: " + e.msg() +
                               (state ? " (remains: " + describe_remains(*state) + ")" : ""));
        }
    } catch (const std::exception& e) {
        failures.push_back(std::string("IPAM release: ") + e.what());
    }
    base::failpoint(base::Failpoint::del_after_ipam);

    // The mode ADD recorded wins over today's config (which may have changed since).
    // Neither (nothing recorded, and a config whose mode no longer parses): nothing of ours can
    // be in the pod, since ADD records the mode before it creates anything.
    const ModeEntry* mode = state ? find_mode_entry(state->mode) : nullptr;
    if (!mode) mode = find_mode_entry(conf.mode);
    if (!mode) {
        spdlog::info("DEL: no recorded attachment and no usable mode: no interface to tear down");
    } else {
        try {
            const auto host_ns = NetNamespace::current();
            // A path that now names another namespace (reused by the runtime for a new pod) is
            // treated as gone: nothing of ours is in there.
            std::string pod_path = env.netns;
            if (state && sandbox_status(*state) == SandboxStatus::replaced && state->netns == env.netns) {
                spdlog::warn("{} names another namespace than at ADD: treated as gone", env.netns);
                pod_path.clear();
            }
            VerbKernel verb_kernel(call, host_ns, open_pod_netns_if_alive(pod_path));
            Kernel& kernel = verb_kernel.kernel();
            const NetNamespace* pod_ns = kernel.pod_ns;
            Rtnl* const pod = kernel.pod;
            // Rules outlive the interface: undone while the link is still in the pod. A failure
            // here must not keep the interface from its teardown (both are retried with the state).
            if (pod && state && !state->pod_setup.is_null()) {
                try {
                    undo_pod_setup(*pod_ns, *pod, env.ifname, PodSetupRecord::from_json(state->pod_setup));
                } catch (const std::exception& e) {
                    failures.push_back(std::string("pod routing teardown: ") + e.what());
                }
            }
            mode->del(DelRequest{env, state, call.policy, store, kernel});
        } catch (const std::exception& e) {
            failures.push_back(std::string("interface teardown: ") + e.what());
        }
    }

    // On failure the state is kept so that the retry knows what to undo.
    throw_if_any(failures, "DEL incomplete (will be retried): ");
    base::failpoint(base::Failpoint::del_after_teardown);
    store.remove(conf.name, env.container_id, env.ifname);
    spdlog::info("DEL done");
}

void cmd_check(const Call& call) {
    const NetConf& conf = call.conf;
    const Environment& env = call.env;
    if (!conf.prev_result)
        throw Error(ErrorCode::invalid_config, "CHECK needs prevResult", "the runtime passes the ADD result");
    const auto& prev = *conf.prev_result;
    int index = -1;
    for (std::size_t i = 0; i < prev.interfaces.size(); ++i)
        if (prev.interfaces[i].name == env.ifname && prev.interfaces[i].sandbox == env.netns)
            index = static_cast<int>(i);
    if (index < 0)
        throw Error(ErrorCode::invalid_config,
                    "prevResult has no interface " + env.ifname + " in sandbox " + env.netns);

    ipam_check(conf, env, call.policy);
    base::failpoint(base::Failpoint::check_after_ipam);
    const auto host_ns = NetNamespace::current();
    VerbKernel verb_kernel(call, host_ns, open_pod_netns(env.netns));
    Kernel& kernel = verb_kernel.kernel();
    const NetNamespace& pod_ns = *kernel.pod_ns;
    Rtnl* const pod = kernel.pod;
    mode_entry(conf.mode).check(CheckRequest{conf, env, call.policy, call.states, kernel, prev.interfaces[index]});
    base::failpoint(base::Failpoint::check_after_mode);

    // Addresses as the final result lists them on our interface; routes only those we added
    // (later plugins may change routes, and CHECK verifies only what we own).
    Result expected;
    for (const auto& ip : prev.ips)
        if (ip.interface && *ip.interface == index) expected.ips.push_back(ip);
    PodSetupRecord record;
    const auto state = call.states.load(conf.name, env.container_id, env.ifname);
    if (state) {
        expected.routes = result_from_json(state->result).routes;
        record = PodSetupRecord::from_json(state->pod_setup);
    }
    auto link = pod->link_by_name(env.ifname);
    if (!link) return;  // sriov DPDK VF: no netdev, no addresses applied (the mode's check saw to the rest)
    check_pod_interface(*pod, link->index, env.ifname, expected, index, conf.pod, record);
    check_pod_sysctls(pod_ns, conf.pod, env.ifname, own_ips(expected, index), conf.ipam.type == kEmbeddedIpamType);
    if (state)
        roce_gids_check(CheckRequest{conf, env, call.policy, call.states, kernel, prev.interfaces[index]}, *state,
                        interface_addresses(expected, index));
}

void cmd_gc(const Call& call) {
    const NetConf& conf = call.conf;
    const Environment& env = call.env;
    if (!conf.valid_attachments) {
        spdlog::info("GC without cni.dev/valid-attachments: nothing to do");
        return;
    }
    const StateStore& store = call.states;
    std::vector<std::string> failures;  // one stuck attachment must not keep the others leaked
    for (const auto& state : store.list(conf.name)) {
        const AttachmentKey key{state.container_id, state.ifname};
        if (std::find(conf.valid_attachments->begin(), conf.valid_attachments->end(), key) !=
            conf.valid_attachments->end())
            continue;
        spdlog::info("GC: releasing stale attachment {} {}", state.container_id, state.ifname);
        Environment stale = env;
        stale.container_id = state.container_id;
        stale.ifname = state.ifname;
        stale.netns = state.netns;
        try {
            cmd_del(call.with_env(stale));
        } catch (const Error& e) {
            failures.push_back(state.container_id + "/" + state.ifname + ": " + e.msg());
        }
    }
    ipam_gc(conf, env, call.policy);
    throw_if_any(failures, "GC could not release every stale attachment: ");
}

void cmd_status(const Call& call) {
    const NetConf& conf = call.conf;
    try {
        ipam_status(conf, call.env);
    } catch (const Error& e) {
        throw Error(ErrorCode::not_available, "IPAM " + conf.ipam.type + " not available: " + e.msg(), e.details());
    }
}

// One verb, from the parsed environment and the raw config on stdin. `state_dir` is set to the
// policy's state directory as soon as the policy is loaded (the call records go next to it).
void handle_verb(const EnvLookup& lookup, const KernelServices& services, const Environment& env,
                 const std::string& input, std::ostream& result_out, std::string& state_dir) {
    std::optional<NetConf> parsed;
    try {
        parsed = parse_net_conf(input, env.command);
    } catch (const Error& e) {
        // DEL must not wedge a pod on a config that can never parse.
        if (env.command != Command::del || !is_config_error(e)) throw;
        const NodePolicy policy = load_node_policy_or_defaults(lookup, mode_names());
        state_dir = policy.state_dir;
        return del_with_unusable_config(env, network_name_of(input), e, policy);
    }
    const NetConf& conf = *parsed;
    // The node policy: ADD/CHECK fail closed on a broken policy file, teardown and reports run
    // with the defaults then (docs/security.md).
    const bool strict = env.command == Command::add || env.command == Command::check;
    const NodePolicy policy = load_node_policy_for(env.command, lookup, mode_names());
    state_dir = policy.state_dir;
    setup_policed_logging(policy, "logFile", conf.log_file, conf.log_level,
                          conf.name + " " + env.container_id + " " + env.ifname, strict);
    if (strict) check_mode_allowed(policy, conf.mode);
    // Before anything changes: a literal runtimeConfig in the NAD must not make the root plugin
    // write a file anywhere on the node.
    if (env.command == Command::add && conf.runtime.device_info_file) {
        check_path_in(policy, "runtimeConfig.CNIDeviceInfoFile", *conf.runtime.device_info_file,
                      policy.device_info_dirs);
        check_not_device_plugin_info_file(policy, "runtimeConfig.CNIDeviceInfoFile", *conf.runtime.device_info_file);
    }
    spdlog::info("{} mode {} netns {}", command_name(env.command), conf.mode.empty() ? "(none)" : conf.mode, env.netns);
    const StateStore states(policy);
    const netns::Sysfs real_sysfs("/sys");
    const Call call{conf, env, policy, states, services.sysfs ? *services.sysfs : real_sysfs, services};
    switch (env.command) {
    case Command::add: cmd_add(call, result_out); break;
    case Command::del: cmd_del(call); break;
    case Command::check: cmd_check(call); break;
    case Command::gc: cmd_gc(call); break;
    case Command::status: cmd_status(call); break;
    case Command::version:
    case Command::none: break;
    }
}

}  // namespace

void del_attachment(const NetConf& conf, const Environment& env, const NodePolicy& policy,
                    const KernelServices& services) {
    const StateStore states(policy);
    const netns::Sysfs real_sysfs("/sys");
    cmd_del(Call{conf, env, policy, states, services.sysfs ? *services.sysfs : real_sysfs, services});
}

int run_plugin(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err) {
    return run_plugin(lookup, in, out, err, KernelServices{});
}

int run_plugin(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err,
               const KernelServices& services) {
    // One metrics record per call that reached a verb (the node agent aggregates them).
    const auto started = std::chrono::steady_clock::now();
    Command verb = Command::none;
    int code = 0;
    std::string state_dir;  // "" when the call failed before it loaded the policy
    const int status =
        run_skel(lookup, in, out, err, "rdmanet CNI plugin: RDMA secondary networks (" + mode_list() + ")",
                 [&](const Environment& env, const std::string& input, std::ostream& result_out) {
                     verb = env.command;
                     try {
                         handle_verb(lookup, services, env, input, result_out, state_dir);
                     } catch (const Error& e) {
                         code = e.code();
                         throw;
                     } catch (...) {
                         code = kCallCodeOther;
                         throw;
                     }
                 });
    if (verb != Command::none && verb != Command::version) {
        const auto us =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
        // The records sit next to the state dir. The policy is read again only when the call
        // failed before it loaded it (a config that does not parse, a broken policy file).
        if (state_dir.empty()) state_dir = load_node_policy_or_defaults(lookup, mode_names()).state_dir;
        append_call_record(call_metrics_dir(state_dir), verb, status == 0 ? 0 : (code ? code : kCallCodeOther),
                           static_cast<std::uint64_t>(us.count()));
    }
    return status;
}

}  // namespace rdmanet::cni
