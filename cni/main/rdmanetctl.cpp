// rdmanetctl: inspection and maintenance of rdmanet on a node.
//
//   rdmanetctl pool list   [--data-dir DIR] [--json]   pools of the local IPAM store
//   rdmanetctl pool show   NAME [--data-dir DIR]       one pool as a whereabouts IPPool object
//   rdmanetctl pool verify [--data-dir DIR]            consistency check of the store
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "rdmanet/cni/ctl.hpp"
#include "rdmanet/ipam/config.hpp"

namespace {

namespace ctl = rdmanet::cni::ctl;

void add_data_dir(CLI::App& cmd, ctl::PoolOptions& options) {
    cmd.add_option("--data-dir", options.data_dir,
                   "directory of the local IPAM store (ipam.data_dir), default " +
                       std::string(rdmanet::ipam::kDefaultDataDir));
}

}  // namespace

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    CLI::App app{"rdmanetctl: inspect rdmanet's state on this node"};
    app.require_subcommand(1);

    ctl::PoolOptions options;
    std::string pool_name;
    int status = 0;

    CLI::App* pool = app.add_subcommand("pool", "the embedded IPAM's local store (whereabouts IPPool shape)");
    pool->require_subcommand(1);

    CLI::App* list = pool->add_subcommand("list", "one line per pool: name, range, number of allocations");
    add_data_dir(*list, options);
    list->add_flag("--json", options.json, "print a JSON array of whereabouts IPPool objects instead");
    list->callback([&] { status = ctl::pool_list(options, std::cout, std::cerr); });

    CLI::App* show = pool->add_subcommand("show", "print one pool as a whereabouts IPPool object (JSON)");
    show->add_option("NAME", pool_name, "IPPool name as `pool list` prints it (e.g. blue-10.0.0.0-16), or the range")
        ->required();
    add_data_dir(*show, options);
    show->callback([&] { status = ctl::pool_show(options, pool_name, std::cout, std::cerr); });

    CLI::App* verify = pool->add_subcommand("verify", "check the store's internal consistency; non-zero exit on problems");
    add_data_dir(*verify, options);
    verify->callback([&] { status = ctl::pool_verify(options, std::cout, std::cerr); });

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help prints usage and exits 0; a usage error is reported on stderr, exit status 2.
        return app.exit(e) == 0 ? 0 : 2;
    }
    std::cout.flush();
    return status;
}
