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
//   rdmanetctl dranet-provider --socket PATH --profiles DIR [--kubeconfig F | --in-cluster] ...
//                                                        DRANET's profile provider (DaemonSet)
#include <chrono>
#include <iostream>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "../cli/admin_cli.hpp"
#include "../cli/rdma_cli.hpp"
#include "rdmanet/cni/cli/pool.hpp"
#include "rdmanet/cni/cli/slices.hpp"
#include "rdmanet/cni/node/stop_signal.hpp"
#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/cni/node/agent.hpp"
#include "rdmanet/cni/node/dranet/run.hpp"

namespace {

namespace cli = rdmanet::cni::cli;
namespace node = rdmanet::cni::node;

void add_data_dir(CLI::App& cmd, cli::PoolOptions& options) {
    cmd.add_option(
        "--data-dir", options.data_dir,
        "directory of the local IPAM store (ipam.data_dir), default " + std::string(rdmanet::ipam::kDefaultDataDir));
}

// The Kubernetes datastore (IPPools through the API) instead of the local store.
// One access or the other, and --namespace only with one of them: a usage error (exit 2) rather
// than a flag that is silently ignored.
void add_kube(CLI::App& cmd, node::KubeOptions& kube) {
    auto* kubeconfig =
        cmd.add_option("--kubeconfig", kube.kubeconfig, "use the Kubernetes datastore through this kubeconfig");
    auto* in_cluster =
        cmd.add_flag("--in-cluster", kube.in_cluster, "use the Kubernetes datastore with the pod's service account");
    kubeconfig->excludes(in_cluster);
    cmd.add_option("--namespace", kube.ns,
                   "namespace of the IPPools (default: the kubeconfig context's, else kube-system)");
    cmd.parse_complete_callback([&kube] {
        if (!kube.ns.empty() && !kube.enabled())
            throw CLI::ValidationError("--namespace", "only with --kubeconfig or --in-cluster");
    });
}

}  // namespace

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    CLI::App app{"rdmanetctl: inspect rdmanet's state on this node"};
    app.require_subcommand(1);

    cli::PoolOptions options;
    std::string pool_name;
    int status = 0;

    CLI::App* pool = app.add_subcommand(
        "pool",
        "the embedded IPAM's pools (whereabouts IPPool shape): the local store, or the Kubernetes datastore with --kubeconfig/--in-cluster");
    pool->require_subcommand(1);

    CLI::App* list = pool->add_subcommand("list", "one line per pool: name, range, number of allocations");
    add_data_dir(*list, options);
    list->add_flag("--json", options.json, "print a JSON array of whereabouts IPPool objects instead");
    add_kube(*list, options.kube);
    list->callback([&] { status = cli::pool_list(options, std::cout, std::cerr); });

    CLI::App* show = pool->add_subcommand("show", "print one pool as a whereabouts IPPool object (JSON)");
    show->add_option("NAME", pool_name, "IPPool name as `pool list` prints it (e.g. blue-10.0.0.0-16), or the range")
        ->required();
    add_data_dir(*show, options);
    add_kube(*show, options.kube);
    show->callback([&] { status = cli::pool_show(options, pool_name, std::cout, std::cerr); });

    CLI::App* slices = pool->add_subcommand(
        "slices",
        "node-slice mode (node_slice_size): the slices this node holds (with --kubeconfig/--in-cluster: every "
        "node's, from the NodeSlicePools and slice IPPools), used and free addresses, and the changes this "
        "node has not published yet");
    add_data_dir(*slices, options);
    slices->add_flag("--json", options.json, "print the report as JSON");
    add_kube(*slices, options.kube);
    slices->callback([&] { status = cli::pool_slices(options, std::cout, std::cerr); });

    CLI::App* blocks = pool->add_subcommand(
        "blocks",
        "nv-ipam pools (ipam.poolName): this node's block or subnet of each, its gateway, used and free "
        "addresses, and whether nv-ipam's controller or rdmanet wrote it");
    add_data_dir(*blocks, options);
    blocks->add_flag("--json", options.json, "print a JSON array");
    blocks->callback([&] { status = cli::pool_blocks(options, std::cout, std::cerr); });

    bool dry_run = false;
    bool local = false;
    CLI::App* reconcile = app.add_subcommand(
        "reconcile",
        "Kubernetes datastore: release allocations of pods that no longer exist and stray reservations, "
        "then the node slices (node_slice_size) of deleted nodes that hold no live pod; --local: undo this node's attachments whose pod network namespace is gone");
    add_kube(*reconcile, options.kube);
    reconcile->add_flag("--local", local,
                        "this node only, any datastore: undo attachments whose pod netns is gone (addresses, "
                        "devices, VF settings, RDMA device, state) as their DEL would have");
    reconcile->add_flag("--dry-run", dry_run, "only print what would be released");
    // --interval: the DaemonSet's long-running reconciler (deploy/daemonset.yaml); a failed round
    // is reported and the next one tries again.
    int reconcile_interval = 0;
    reconcile->add_option("--interval", reconcile_interval, "keep running: reconcile every SECONDS (0 = once)")
        ->check(CLI::Range(0, 86400));
    reconcile->callback([&] {
        if (local) {
            status = cli::reconcile_local(cli::LocalReconcileOptions{dry_run, {}}, std::cout, std::cerr);
            return;
        }
        if (reconcile_interval <= 0) {
            status = cli::reconcile(options.kube, dry_run, std::cout, std::cerr);
            return;
        }
        // The DaemonSet container's PID 1: SIGTERM ends it at once with exit 0, also in the middle
        // of a round retrying an unreachable API server. Abandoning a round is safe: each release
        // is one API request, and the next reconciler picks up what this one left.
        node::exit_on_stop_signal("rdmanetctl reconcile: stopping (SIGTERM)\n");
        for (;;) {
            cli::reconcile(options.kube, dry_run, std::cout, std::cerr);
            std::cout.flush();
            std::cerr.flush();
            std::this_thread::sleep_for(std::chrono::seconds(reconcile_interval));
        }
    });

    // agent: the DaemonSet's node agent (cni/node/agent.cpp).
    node::AgentOptions agent_options;
    CLI::App* agent = app.add_subcommand(
        "agent", "node agent: repair attachments whose pod is gone, serve metrics; runs until SIGTERM");
    agent->add_option("--interval", agent_options.interval_seconds, "seconds between repair passes")
        ->check(CLI::Range(1, 86400));
    agent->add_option("--metrics-address", agent_options.metrics_address,
                      "serve Prometheus metrics on HOST:PORT (e.g. 127.0.0.1:9750); off when empty");
    agent->add_option("--ipam-data-dir", agent_options.ipam_data_dir,
                      "local IPAM store whose pools are reported and whose node-slice backlog is published, default " +
                          std::string(rdmanet::ipam::kDefaultDataDir));
    add_kube(*agent, agent_options.kube);
    agent->add_option("--node-name", agent_options.node_name, "this node's name (with the Kubernetes datastore)")
        ->envname("NODE_NAME");
    agent
        ->add_option("--pod-grace", agent_options.pod_grace_seconds,
                     "seconds a pod must be missing from the API before its attachments are undone")
        ->check(CLI::Range(0, 86400));
    agent->add_option("--dranet-state-dir", agent_options.dranet_state_dir,
                      "the DRANET provider's --state-dir, whose claims the agent collects when their ResourceClaim is "
                      "gone (default: the provider's default)");
    agent
        ->add_option("--dranet-socket", agent_options.dranet_socket,
                     "the DRANET provider's --socket, to which the claim GC posts its releases")
        ->capture_default_str();
    agent->add_option("--passes", agent_options.max_passes, "stop after N passes (0 = run until SIGTERM)")
        ->check(CLI::Range(0, 1000000));
    agent->callback([&] { status = node::run_agent(agent_options, std::cout, std::cerr); });

    // dranet-provider: DRANET's profile provider (cni/node/dranet/, docs/dra-provider.md).
    node::dranet::RunOptions provider_options;
    CLI::App* provider =
        app.add_subcommand("dranet-provider",
                           "serve DRANET's profile-provider webhook on a root-only unix socket: addresses from "
                           "rdmanet's IPAM and per-rail routes/rules for ResourceClaims; runs until SIGTERM");
    provider
        ->add_option("--socket", provider_options.socket_path,
                     "unix socket to serve (DRANET's --webhook-url=unix://PATH), e.g. /run/rdmanet/dranet.sock")
        ->required();
    provider->add_option("--profiles", provider_options.profiles_dir, "directory of the profiles, DIR/<profile>.json")
        ->required();
    provider->add_option("--state-dir", provider_options.state_dir,
                         "the provider's claim records (default: dranet/ next to rdmanet's state directory)");
    provider->add_option("--node-name", provider_options.node_name, "this node's name (node slices)")
        ->envname("NODE_NAME");
    provider->add_option("--threads", provider_options.threads, "connections served at once")->check(CLI::Range(1, 64));
    // The Kubernetes access of profiles whose ipam section names no kubeconfig of its own.
    add_kube(*provider, provider_options.kube);
    provider->callback([&] { status = node::dranet::run_provider(provider_options, std::cout, std::cerr); });

    CLI::App* verify =
        pool->add_subcommand("verify", "check the store's internal consistency; non-zero exit on problems");
    add_data_dir(*verify, options);
    verify->callback([&] { status = cli::pool_verify(options, std::cout, std::cerr); });

    // render, install, doctor (cni/cli/admin_cli.hpp).
    cli::AdminCli admin;
    admin.add(app, status);
    // rdma mode, devices (cni/cli/rdma_cli.hpp).
    cli::RdmaCli rdma_cli;
    rdma_cli.add(app, status);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help prints usage and exits 0; a usage error is reported on stderr, exit status 2.
        return app.exit(e) == 0 ? 0 : 2;
    }
    std::cout.flush();
    return status;
}
