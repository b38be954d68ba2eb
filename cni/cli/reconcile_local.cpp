// rdmanetctl reconcile --local: one repair pass over this node's attachment states.
#include <ostream>

#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/node/agent.hpp"
#include "rdmanet/base/exit_status.hpp"

namespace rdmanet::cni::ctl {

namespace {

std::string describe(const RepairItem& item) {
    return item.network + " " + item.container_id + " " + item.ifname + " (" + item.mode + "): netns " +
           (item.netns.empty() ? "\"\"" : item.netns) + ", " + item.reason;
}

}  // namespace

void print_repair_report(const RepairReport& report, bool dry_run, std::ostream& out, std::ostream& err) {
    for (const auto& item : report.repaired) out << (dry_run ? "would repair " : "repaired ") << describe(item) << '\n';
    for (const auto& item : report.failed) err << "repair failed " << describe(item) << ": " << item.error << '\n';
    for (const auto& item : report.not_repairable)
        err << "not repairable " << describe(item) << ": " << item.error << '\n';
    out << "reconcile --local: " << report.checked << " attachments, " << report.alive << " alive, "
        << report.repaired.size() << (dry_run ? " to repair, " : " repaired, ") << report.failed.size() << " failed, "
        << report.not_repairable.size() << " not repairable\n";
}

int reconcile_local(const LocalReconcileOptions& options, std::ostream& out, std::ostream& err) {
    return base::exit_status_of(err, "rdmanetctl reconcile --local", [&] {
        const NodePolicy policy = load_node_policy_or_defaults(process_env_lookup(), mode_names());
        const StateStore store(policy);
        const auto report = repair_stranded_attachments(store, RepairOptions{options.dry_run, options.services});
        print_repair_report(report, options.dry_run, out, err);
        return report.failed.empty() ? 0 : 1;
    });
}

}  // namespace rdmanet::cni::ctl
