// rdmanetctl: inspection and maintenance of rdmanet on a node.
//
//   rdmanetctl pool list   [--data-dir DIR] [--json]   pools of the local IPAM store
//   rdmanetctl pool show   NAME [--data-dir DIR]       one pool as a whereabouts IPPool object
//   rdmanetctl pool verify [--data-dir DIR]            consistency check of the store
//   rdmanetctl pool slices [--data-dir DIR] [--json] [--kubeconfig F]   node slices and unpublished changes
//   rdmanetctl pool blocks [--data-dir DIR] [--json]   this node's blocks of nv-ipam pools
//   rdmanetctl pool list|show ... --kubeconfig F | --in-cluster   the same from the Kubernetes datastore
//   rdmanetctl reconcile (--kubeconfig F | --in-cluster) [--dry-run] [--interval S]  release allocations of gone pods
//                                                        and the node slices of deleted nodes
//   rdmanetctl reconcile --local [--dry-run]             undo this node's attachments whose pod netns is gone
//   rdmanetctl agent [--interval S] [--metrics-address A] ...  the node agent (DaemonSet)
//   rdmanetctl render -f FILE [--ipam rdmanet] [-o json]  network specs -> NetworkAttachmentDefinitions
//   rdmanetctl install [--watch] ...                     node installer (DaemonSet)
//   rdmanetctl doctor [--json] [--root DIR] ...          node checks; exit 1 on problems
//   rdmanetctl rdma mode [exclusive|shared] [--persist]  RDMA netns mode (show/set, boot option)
//   rdmanetctl devices [--sysfs-root DIR]                RDMA devices, ports, netdevs, PCI, PF/VF
//   rdmanetctl dranet-provider --socket PATH --profiles DIR [--kubeconfig F | --in-cluster]
//                              [--dranet-version 1.4|1.5|main] ...
//                                                        DRANET's profile provider (DaemonSet)
//
// Each subcommand's wiring is one object in this folder (ctl_*.hpp) that holds its options; the
// commands themselves are plain functions of the rooms below.
#include <iostream>

#include <CLI/CLI.hpp>

#include "ctl_admin.hpp"
#include "ctl_node.hpp"
#include "ctl_pool.hpp"
#include "ctl_rdma.hpp"

int main(int argc, char** argv) {
    using namespace rdmanet::cni::main;
    std::ios::sync_with_stdio(false);
    CLI::App app{"rdmanetctl: inspect rdmanet's state on this node"};
    app.require_subcommand(1);

    int status = 0;
    PoolCommands pool;
    pool.add(app, status);
    ReconcileCommand reconcile;
    reconcile.add(app, status);
    AgentCommand agent;
    agent.add(app, status);
    DranetProviderCommand provider;
    provider.add(app, status);
    AdminCommands admin;  // render, install, doctor
    admin.add(app, status);
    RdmaCommands rdma;  // rdma mode, devices
    rdma.add(app, status);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help prints usage and exits 0; a usage error is reported on stderr, exit status 2.
        return app.exit(e) == 0 ? 0 : 2;
    }
    std::cout.flush();
    return status;
}
