#pragma once
// CLI11 wiring of `rdmanetctl rdma mode` (cni/cli/rdma.cpp) and `rdmanetctl devices`
// (cni/doctor/devices.cpp, with libibverbs' view from cni/cli/verbs.cpp). The options live in this
// object, which must outlive app.parse().
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "rdmanet/cni/cli/rdma.hpp"
#include "rdmanet/cni/doctor/devices.hpp"

namespace rdmanet::cni::main {

struct RdmaCommands {
    cli::RdmaModeOptions mode;
    doctor::DevicesOptions devices_options;
    bool no_verbs = false;

    void add(CLI::App& app, int& status) {
        CLI::App* rdma = app.add_subcommand("rdma", "the node's RDMA network-namespace handling");
        rdma->require_subcommand(1);
        CLI::App* m =
            rdma->add_subcommand("mode",
                                 "show the RDMA netns mode (exclusive|shared), or set it; --persist also writes the "
                                 "ib_core module option so it holds after a reboot");
        m->add_option("MODE", mode.set, "exclusive or shared; omitted = show")
            ->check(CLI::IsMember({"exclusive", "shared"}));
        m->add_flag("--persist", mode.persist,
                    "write `options ib_core netns_mode=N` to <modprobe-dir>/rdmanet-ib_core.conf");
        m->add_option("--modprobe-dir", mode.modprobe_dir,
                      "directory of modprobe configuration (default /etc/modprobe.d)");
        m->callback([this, &status] {
            status = cli::rdma_mode(
                mode, [] { return netns::open_rdma_netlink(); }, std::cout, std::cerr);
        });

        CLI::App* d = app.add_subcommand(
            "devices", "RDMA devices of this node: device, port, state, link layer, netdev, PCI, PF/VF/SF");
        d->add_option("--sysfs-root", devices_options.sysfs_root,
                      "read sysfs from this root (tests); disables libibverbs");
        d->add_flag("--no-verbs", no_verbs, "sysfs only, do not open the devices through libibverbs");
        d->callback([this, &status] {
            devices_options.verbs = !no_verbs;
            status = doctor::devices(devices_options, cli::query_verbs_ports, std::cout, std::cerr);
        });
    }
};

}  // namespace rdmanet::cni::main
