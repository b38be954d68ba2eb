// rdmanetctl reconcile --local: one repair pass over this node's attachment states.
#include <ostream>

#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/cli/pool.hpp"
#include "rdmanet/cni/node/repair.hpp"
#include "rdmanet/base/exit_status.hpp"

namespace rdmanet::cni::cli {

int reconcile_local(const LocalReconcileOptions& options, std::ostream& out, std::ostream& err) {
    return base::exit_status_of(err, "rdmanetctl reconcile --local", [&] {
        const NodePolicy policy = load_node_policy_or_defaults(process_env_lookup(), mode_names());
        const StateStore store(policy);
        const auto report =
            node::repair_stranded_attachments(store, node::RepairOptions{options.dry_run, options.services});
        node::print_repair_report(report, options.dry_run, out, err);
        return report.failed.empty() ? 0 : 1;
    });
}

}  // namespace rdmanet::cni::cli
