#pragma once
// The node agent's repair pass: attachments whose pod sandbox is gone without a DEL (force-deleted
// pod, lost runtime cache, node crash; no runtime ever calls CNI GC for a secondary network) are
// undone from their attachment state, by the very DEL code the runtime would have run.
//
// What "gone" means (sandbox.hpp): the recorded netns path no longer names a network namespace,
// or names another one than at ADD. A live attachment is never touched. The repair runs DEL with
// no pod namespace at all, so it never acts inside a namespace the plugin did not create; it
// releases the addresses, recovers a device the kernel returned to the host under its pod-side
// name (by the identity recorded at ADD), restores VF settings and GUIDs, removes a stale
// device-info file and finally the state. An RDMA device moved into the pod (exclusive mode) is
// returned by the kernel when the namespace is freed; until the host sees it again the repair
// undoes nothing and reports the attachment as failed (repair_rdma_home.hpp). It touches no
// device it did not record.
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/plugin/plugin.hpp"
#include "rdmanet/cni/state/sandbox.hpp"

namespace rdmanet::cni::node {

struct RepairItem {
    std::string network, container_id, ifname, mode, netns;
    // Why it was undone, the "reason" of the repair metrics: "netns_gone", "netns_replaced"
    // (the path names another namespace now) or "pod_gone" (deleted from the API).
    std::string reason;
    std::string error;  // failed repairs: why (the state is kept, the next pass tries again)
};

struct RepairReport {
    std::size_t checked = 0;                 // attachment states read
    std::size_t alive = 0;                   // left alone: sandbox still there
    std::vector<RepairItem> repaired;        // undone and state removed (dry run: would be)
    std::vector<RepairItem> failed;          // tried, something remains; kept for the next pass
    std::vector<RepairItem> not_repairable;  // gone, but recorded without the configuration DEL needs
    // Live attachments per mode (metrics: attachments per mode).
    std::map<std::string, std::size_t> alive_by_mode;
};

struct RepairOptions {
    bool dry_run = false;
    KernelServices services;  // null members: the real kernel
};

// One pass over every attachment state in `store`. Never throws for one attachment: failures are
// reported per item. Logs one line per repair.
RepairReport repair_stranded_attachments(const StateStore& store, const RepairOptions& options);

// The repair of one attachment (throws Error when something remains). Without
// `in_recorded_netns` the DEL runs with no pod namespace (the sandbox is gone); with it, inside
// the recorded namespace, which del_attachment still verifies is the one recorded at ADD (used
// when the pod is gone from the API while its sandbox lingers).
void repair_attachment(const AttachmentState& state, const NodePolicy& policy, const KernelServices& services,
                       bool in_recorded_netns = false);

// The lines a repair pass prints for `report` ("repaired NETWORK CONTAINER IFNAME (MODE): netns
// PATH gone", one per failure on err, and a summary; repair_report.cpp): the agent's log and
// `rdmanetctl reconcile --local` share them.
void print_repair_report(const RepairReport& report, bool dry_run, std::ostream& out, std::ostream& err);

}  // namespace rdmanet::cni::node
