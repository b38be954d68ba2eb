#pragma once
// CLI11 wiring of `rdmanetctl pool list|show|slices|blocks|verify` (the commands are in cni/cli/).
// The options live in this object, which must outlive app.parse().
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "ctl_options.hpp"
#include "rdmanet/cni/cli/pool.hpp"
#include "rdmanet/cni/cli/slices.hpp"

namespace rdmanet::cni::main {

struct PoolCommands {
    cli::PoolOptions options;
    std::string pool_name;

    void add(CLI::App& app, int& status) {
        CLI::App* pool = app.add_subcommand("pool",
                                            "the embedded IPAM's pools (whereabouts IPPool shape): the local store, or "
                                            "the Kubernetes datastore with --kubeconfig/--in-cluster");
        pool->require_subcommand(1);

        CLI::App* list = pool->add_subcommand("list", "one line per pool: name, range, number of allocations");
        add_data_dir(*list, options.data_dir);
        list->add_flag("--json", options.json, "print a JSON array of whereabouts IPPool objects instead");
        add_kube(*list, options.kube);
        list->callback([this, &status] { status = cli::pool_list(options, std::cout, std::cerr); });

        CLI::App* show = pool->add_subcommand("show", "print one pool as a whereabouts IPPool object (JSON)");
        show->add_option("NAME", pool_name,
                         "IPPool name as `pool list` prints it (e.g. blue-10.0.0.0-16), or the range")
            ->required();
        add_data_dir(*show, options.data_dir);
        add_kube(*show, options.kube);
        show->callback([this, &status] { status = cli::pool_show(options, pool_name, std::cout, std::cerr); });

        CLI::App* slices = pool->add_subcommand(
            "slices",
            "node-slice mode (node_slice_size): the slices this node holds (with --kubeconfig/--in-cluster: every "
            "node's, from the NodeSlicePools and slice IPPools), used and free addresses, and the changes this "
            "node has not published yet");
        add_data_dir(*slices, options.data_dir);
        slices->add_flag("--json", options.json, "print the report as JSON");
        add_kube(*slices, options.kube);
        slices->callback([this, &status] { status = cli::pool_slices(options, std::cout, std::cerr); });

        CLI::App* blocks = pool->add_subcommand(
            "blocks",
            "nv-ipam pools (ipam.poolName): this node's block or subnet of each, its gateway, used and free "
            "addresses, and whether nv-ipam's controller or rdmanet wrote it");
        add_data_dir(*blocks, options.data_dir);
        blocks->add_flag("--json", options.json, "print a JSON array");
        blocks->callback([this, &status] { status = cli::pool_blocks(options, std::cout, std::cerr); });

        CLI::App* verify =
            pool->add_subcommand("verify", "check the store's internal consistency; non-zero exit on problems");
        add_data_dir(*verify, options.data_dir);
        verify->callback([this, &status] { status = cli::pool_verify(options, std::cout, std::cerr); });
    }
};

}  // namespace rdmanet::cni::main
