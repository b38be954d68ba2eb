// rdmanetctl reconcile: ipam::kube::reconcile() with its report on stdout.
#include <ostream>

#include "kube.hpp"
#include "rdmanet/cni/ctl/pool.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/reconcile.hpp"

namespace rdmanet::cni::ctl {

int reconcile(const KubeOptions& options, bool dry_run, std::ostream& out, std::ostream& err) {
    if (!options.enabled()) {
        err << "rdmanetctl reconcile: needs the Kubernetes datastore: --kubeconfig PATH or --in-cluster\n";
        return 2;
    }
    try {
        auto store = open_kube_store(options);
        const auto report = ipam::kube::reconcile(*store, dry_run);
        const char* verb = dry_run ? "would release" : "released";
        for (const auto& r : report.released) out << verb << " " << r << '\n';
        for (const auto& r : report.reservations_deleted)
            out << (dry_run ? "would delete" : "deleted") << " reservation " << r << '\n';
        for (const auto& r : report.unreserved) out << "no reservation (left alone) " << r << '\n';
        out << "reconcile " << store->ns() << ": " << report.pools << " pools, " << report.allocations
            << " allocations kept, " << report.released.size() << " released, " << report.reservations_deleted.size()
            << " reservations deleted, " << report.pods << " pods\n";
        return 0;
    } catch (const ipam::IpamError& e) {
        err << "rdmanetctl reconcile: " << e.msg << '\n';
    } catch (const std::exception& e) {
        err << "rdmanetctl reconcile: " << e.what() << '\n';
    }
    return 1;
}

}  // namespace rdmanet::cni::ctl
