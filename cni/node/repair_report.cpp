// The lines a repair pass prints: `rdmanetctl reconcile --local` and the node agent's log share them.
#include <ostream>

#include "rdmanet/cni/node/repair.hpp"

namespace rdmanet::cni::node {

namespace {

std::string describe_repair_item(const RepairItem& item) {
    return item.network + " " + item.container_id + " " + item.ifname + " (" + item.mode + "): netns " +
           (item.netns.empty() ? "\"\"" : item.netns) + ", " + item.reason;
}

}  // namespace

void print_repair_report(const RepairReport& report, bool dry_run, std::ostream& out, std::ostream& err) {
    for (const auto& item : report.repaired)
        out << (dry_run ? "would repair " : "repaired ") << describe_repair_item(item) << '\n';
    for (const auto& item : report.failed)
        err << "repair failed " << describe_repair_item(item) << ": " << item.error << '\n';
    for (const auto& item : report.not_repairable)
        err << "not repairable " << describe_repair_item(item) << ": " << item.error << '\n';
    out << "reconcile --local: " << report.checked << " attachments, " << report.alive << " alive, "
        << report.repaired.size() << (dry_run ? " to repair, " : " repaired, ") << report.failed.size() << " failed, "
        << report.not_repairable.size() << " not repairable\n";
}

}  // namespace rdmanet::cni::node
