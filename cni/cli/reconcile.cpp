// rdmanetctl reconcile: ipam::kube::reconcile() and then ipam::kube::reclaim_slices() (the slices
// of deleted nodes, node_slice_size), with their reports on stdout. The slices come second so that
// a deleted node's slice whose pods are all gone is empty, and released, in the same run.
#include <ostream>

#include "rdmanet/cni/node/kube.hpp"
#include "rdmanet/cni/cli/pool.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/reconcile.hpp"
#include "rdmanet/ipam/kube/slice_reclaim.hpp"
#include "rdmanet/base/exit_status.hpp"

namespace rdmanet::cni::cli {

int reconcile(const node::KubeOptions& options, bool dry_run, std::ostream& out, std::ostream& err) {
    if (!options.enabled()) {
        err << "rdmanetctl reconcile: needs the Kubernetes datastore: --kubeconfig PATH or --in-cluster\n";
        return 2;
    }
    return base::exit_status_of(err, "rdmanetctl reconcile", [&] {
        auto store = node::open_kube_store(options);
        const auto report = ipam::kube::reconcile(*store, dry_run);
        const char* verb = dry_run ? "would release" : "released";
        for (const auto& r : report.released) out << verb << " " << r << '\n';
        for (const auto& r : report.reservations_deleted)
            out << (dry_run ? "would delete" : "deleted") << " reservation " << r << '\n';
        for (const auto& r : report.unreserved) out << "no reservation (left alone) " << r << '\n';
        if (report.slice_entries > 0)
            out << report.slice_entries << " entries of node-slice IPPools have no reservation, as node slices "
                << "write none (their slices are disjoint)\n";
        out << "reconcile " << store->ns() << ": " << report.pools << " pools, " << report.allocations
            << " allocations kept, " << report.released.size() << " released, " << report.reservations_deleted.size()
            << " reservations deleted, " << report.pods << " pods\n";

        const auto slices = ipam::kube::reclaim_slices(store->api(), store->ns(), dry_run);
        for (const auto& r : slices.released) out << (dry_run ? "would release" : "released") << " slice " << r << '\n';
        for (const auto& r : slices.kept) out << "kept slice " << r << '\n';
        for (const auto& r : slices.restored) out << "gave back slice " << r << '\n';
        for (const auto& r : slices.problems) err << "rdmanetctl reconcile: slice " << r << '\n';
        if (slices.node_slice_pools > 0) {
            out << "reconcile " << store->ns() << ": " << slices.node_slice_pools << " node slice pools, "
                << slices.slices << " slices held, " << slices.released.size() << " slices of deleted nodes released, "
                << slices.kept.size() << " kept in use, " << slices.nodes << " nodes\n";
        }
        return slices.problems.empty() ? 0 : 1;
    });
}

}  // namespace rdmanet::cni::cli
