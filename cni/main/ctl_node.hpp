#pragma once
// CLI11 wiring of the node's long-running and repair commands: `rdmanetctl reconcile`
// (cni/cli/), `rdmanetctl agent` (cni/node/agent.hpp) and `rdmanetctl dranet-provider`
// (cni/node/dranet/). The options live in these objects, which must outlive app.parse().
#include <chrono>
#include <iostream>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "ctl_options.hpp"
#include "rdmanet/cni/cli/pool.hpp"
#include "rdmanet/cni/node/agent.hpp"
#include "rdmanet/cni/node/dranet/run.hpp"
#include "rdmanet/cni/node/stop_signal.hpp"

namespace rdmanet::cni::main {

struct ReconcileCommand {
    node::KubeOptions kube;
    bool dry_run = false;
    bool local = false;
    // --interval: the DaemonSet's long-running reconciler (deploy/daemonset.yaml); a failed round
    // is reported and the next one tries again.
    int interval = 0;

    void add(CLI::App& app, int& status) {
        CLI::App* cmd = app.add_subcommand(
            "reconcile",
            "Kubernetes datastore: release allocations of pods that no longer exist and stray reservations, "
            "then the node slices (node_slice_size) of deleted nodes that hold no live pod; --local: undo this "
            "node's attachments whose pod network namespace is gone");
        add_kube(*cmd, kube);
        cmd->add_flag("--local", local,
                      "this node only, any datastore: undo attachments whose pod netns is gone (addresses, "
                      "devices, VF settings, RDMA device, state) as their DEL would have");
        cmd->add_flag("--dry-run", dry_run, "only print what would be released");
        cmd->add_option("--interval", interval, "keep running: reconcile every SECONDS (0 = once)")
            ->check(CLI::Range(0, 86400));
        cmd->callback([this, &status] { status = run(); });
    }

private:
    int run() const {
        if (local) return cli::reconcile_local(cli::LocalReconcileOptions{dry_run, {}}, std::cout, std::cerr);
        if (interval <= 0) return cli::reconcile(kube, dry_run, std::cout, std::cerr);
        // The DaemonSet container's PID 1: SIGTERM ends it at once with exit 0, also in the middle
        // of a round retrying an unreachable API server. Abandoning a round is safe: each release
        // is one API request, and the next reconciler picks up what this one left.
        node::exit_on_stop_signal("rdmanetctl reconcile: stopping (SIGTERM)\n");
        for (;;) {
            cli::reconcile(kube, dry_run, std::cout, std::cerr);
            std::cout.flush();
            std::cerr.flush();
            std::this_thread::sleep_for(std::chrono::seconds(interval));
        }
    }
};

// agent: the DaemonSet's node agent.
struct AgentCommand {
    node::AgentOptions options;

    void add(CLI::App& app, int& status) {
        CLI::App* cmd = app.add_subcommand(
            "agent", "node agent: repair attachments whose pod is gone, serve metrics; runs until SIGTERM");
        cmd->add_option("--interval", options.interval_seconds, "seconds between repair passes")
            ->check(CLI::Range(1, 86400));
        cmd->add_option("--metrics-address", options.metrics_address,
                        "serve Prometheus metrics on HOST:PORT (e.g. 127.0.0.1:9750); off when empty");
        cmd->add_option("--ipam-data-dir", options.ipam_data_dir,
                        "local IPAM store whose pools are reported and whose node-slice backlog is published, "
                        "default " +
                            std::string(ipam::kDefaultDataDir));
        add_kube(*cmd, options.kube);
        cmd->add_option("--node-name", options.node_name, "this node's name (with the Kubernetes datastore)")
            ->envname("NODE_NAME");
        cmd->add_option("--pod-grace", options.pod_grace_seconds,
                        "seconds a pod must be missing from the API before its attachments are undone")
            ->check(CLI::Range(0, 86400));
        cmd->add_option("--dranet-state-dir", options.dranet_state_dir,
                        "the DRANET provider's --state-dir, whose claims the agent collects when their ResourceClaim "
                        "is gone (default: the provider's default)");
        cmd->add_option("--dranet-socket", options.dranet_socket,
                        "the DRANET provider's --socket, to which the claim GC posts its releases")
            ->capture_default_str();
        cmd->add_option("--passes", options.max_passes, "stop after N passes (0 = run until SIGTERM)")
            ->check(CLI::Range(0, 1000000));
        cmd->callback([this, &status] { status = node::run_agent(options, std::cout, std::cerr); });
    }
};

// dranet-provider: DRANET's profile provider (docs/dra-provider.md).
struct DranetProviderCommand {
    node::dranet::RunOptions options;
    std::string dranet_version = node::dranet::kDefaultDranetVersion.str();

    void add(CLI::App& app, int& status) {
        CLI::App* cmd =
            app.add_subcommand("dranet-provider",
                               "serve DRANET's profile-provider webhook on a root-only unix socket: addresses from "
                               "rdmanet's IPAM and per-rail routes/rules for ResourceClaims; runs until SIGTERM");
        cmd->add_option("--socket", options.socket_path,
                        "unix socket to serve (DRANET's --webhook-url=unix://PATH), e.g. /run/rdmanet/dranet.sock")
            ->required();
        cmd->add_option("--profiles", options.profiles_dir, "directory of the profiles, DIR/<profile>.json")
            ->required();
        cmd->add_option("--state-dir", options.state_dir,
                        "the provider's claim records (default: dranet/ next to rdmanet's state directory)");
        cmd->add_option("--node-name", options.node_name, "this node's name (node slices)")->envname("NODE_NAME");
        cmd->add_option("--threads", options.threads, "connections served at once")->check(CLI::Range(1, 64));
        // The Kubernetes access of profiles whose ipam section names no kubeconfig of its own.
        add_kube(*cmd, options.kube);
        // DRANET's request names no version and its answer decoding drops unknown fields silently.
        cmd->add_option("--dranet-version", dranet_version,
                        "the DRANET release that calls (1.4, 1.5, main, ...): the answers hold only the fields it "
                        "applies (1.4 has no interface.arpIgnore/arpAnnounce)")
            ->capture_default_str()
            ->check(CLI::Validator(
                [](std::string& text) {
                    return node::dranet::parse_dranet_version(text)
                               ? std::string()
                               : "not a DRANET version with the profile-provider webhook (1.4 or later, or main): " +
                                     text;
                },
                "VERSION"));
        cmd->callback([this, &status] {
            options.dranet = *node::dranet::parse_dranet_version(dranet_version);
            status = node::dranet::run_provider(options, std::cout, std::cerr);
        });
    }
};

}  // namespace rdmanet::cni::main
