#include "rdmanet/cni/modes/net_conf.hpp"
#include "rdmanet/cni/node/repair.hpp"

#include <spdlog/spdlog.h>

#include "rdmanet/cni/protocol/args.hpp"
#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/node/repair_rdma_home.hpp"
#include "rdmanet/cni/plugin/teardown.hpp"

namespace rdmanet::cni::node {

namespace {

RepairItem item_of(const AttachmentState& state, SandboxStatus sandbox) {
    return RepairItem{state.network,
                      state.container_id,
                      state.ifname,
                      state.mode,
                      state.netns,
                      sandbox == SandboxStatus::replaced ? "netns_replaced" : "netns_gone",
                      ""};
}

}  // namespace

void repair_attachment(const AttachmentState& state, const NodePolicy& policy, const KernelServices& services,
                       bool in_recorded_netns) {
    if (!state.netconf.is_object())
        throw Error(ErrorCode::invalid_config,
                    "recorded without its network configuration (written by an older "
                    "rdmanet): only the runtime's DEL can undo it");
    const NetConf conf = parse_net_conf(state.netconf.dump(), Command::del);
    Environment env;
    env.command = Command::del;
    env.container_id = state.container_id;
    env.ifname = state.ifname;
    // No namespace: the recorded one is gone, and a namespace now at that path is someone else's.
    env.netns = in_recorded_netns ? state.netns : "";
    env.cni_args_raw = state.cni_args;
    env.args = parse_cni_args(state.cni_args);
    env.path = state.cni_path;
    env.nodename = state.nodename;
    del_attachment(conf, env, policy, services);
}

RepairReport repair_stranded_attachments(const StateStore& store, const RepairOptions& options) {
    RepairReport report;
    for (const auto& state : store.list_all()) {
        ++report.checked;
        const SandboxStatus sandbox = sandbox_status(state);
        if (sandbox == SandboxStatus::alive || sandbox == SandboxStatus::unknown) {
            ++report.alive;
            ++report.alive_by_mode[state.mode];
            continue;
        }
        RepairItem item = item_of(state, sandbox);
        if (!state.netconf.is_object()) {
            item.error = "recorded without its network configuration: only the runtime's DEL can undo it";
            spdlog::warn("repair: {} {} {} ({} netns {} {}): {}", state.network, state.container_id, state.ifname,
                         state.mode, state.netns, sandbox_status_name(sandbox), item.error);
            report.not_repairable.push_back(std::move(item));
            continue;
        }
        if (options.dry_run) {
            report.repaired.push_back(std::move(item));
            continue;
        }
        try {
            if (auto waiting = rdma_device_not_home(state, options.services)) {
                item.error = *waiting;
                spdlog::warn("repair postponed: {} {} {} ({}): {}", state.network, state.container_id, state.ifname,
                             state.mode, item.error);
                report.failed.push_back(std::move(item));
                continue;
            }
            repair_attachment(state, store.policy(), options.services);
            spdlog::info("repaired: {} {} {} ({}): netns {} {}, undone from its attachment state", state.network,
                         state.container_id, state.ifname, state.mode, state.netns, sandbox_status_name(sandbox));
            report.repaired.push_back(std::move(item));
        } catch (const std::exception& e) {
            item.error = e.what();
            spdlog::warn("repair failed: {} {} {} ({}): {}", state.network, state.container_id, state.ifname,
                         state.mode, item.error);
            report.failed.push_back(std::move(item));
        }
    }
    return report;
}

}  // namespace rdmanet::cni::node
