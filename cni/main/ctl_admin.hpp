#pragma once
// CLI11 wiring of rdmanetctl's cluster-admin commands: render (cni/translate/), install
// (cni/cli/), doctor (cni/doctor/). The options live in this object, which must outlive
// app.parse().
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "rdmanet/cni/cli/install.hpp"
#include "rdmanet/cni/doctor/doctor.hpp"
#include "rdmanet/cni/translate/render.hpp"

namespace rdmanet::cni::main {

struct AdminCommands {
    translate::RenderOptions render_options;
    std::string render_file;
    cli::InstallOptions install_options;
    doctor::DoctorOptions doctor_options;
    std::vector<std::string> expect_vfs;
    int install_interval = 60;
    int api_timeout_ms = 3000;

    void add(CLI::App& app, int& status) {
        add_render(app, status);
        add_install(app, status);
        add_doctor(app, status);
    }

private:
    void add_render(CLI::App& app, int& status) {
        auto* cmd = app.add_subcommand(
            "render",
            "turn network specs (RdmaNetwork, network-operator HostDeviceNetwork/MacvlanNetwork/IPoIBNetwork, "
            "or a NetworkAttachmentDefinition) into validated NetworkAttachmentDefinitions");
        cmd->add_option("-f,--filename", render_file, "YAML or JSON file with one or more documents, - for stdin")
            ->required();
        cmd->add_option(
               "--ipam", render_options.ipam,
               "\"rdmanet\": switch whereabouts IPAM (same keys) and nv-ipam (same pools) to rdmanet-ipam; default: keep the IPAM")
            ->check(CLI::IsMember({"rdmanet"}));
        cmd->add_flag(
            "--nv-ipam-to-node-slices", render_options.nv_ipam_to_slices,
            "with --ipam rdmanet: convert nv-ipam's IPPool (given in -f) into node slices instead of keeping the pool");
        cmd->add_option(
            "--ipam-kubeconfig", render_options.ipam_kubeconfig,
            "with --ipam rdmanet: the kubeconfig the IPAM reads (default: the one rdmanetctl install writes)");
        cmd->add_option(
            "--cni-version", render_options.cni_version,
            "cniVersion of the rendered config (network-operator kinds; RdmaNetwork may set spec.cniVersion)");
        cmd->add_option("-o,--output", render_options.output,
                        "yaml (default), json, or profile: a DRANET provider profile (DIR/<profile>.json) of the "
                        "network (needs rdmanet-ipam: --ipam rdmanet)")
            ->check(CLI::IsMember({"yaml", "json", "profile"}));
        cmd->callback(
            [this, &status] { status = translate::render(render_file, render_options, std::cout, std::cerr); });
    }

    void add_install(CLI::App& app, int& status) {
        auto& o = install_options;
        auto* cmd = app.add_subcommand(
            "install",
            "node installer (DaemonSet): copy the binaries into the host CNI bin dir atomically, write the IPAM "
            "kubeconfig from the service account, optionally persist the RDMA netns mode");
        cmd->add_option("--source-dir", o.source_dir, "where the binaries to install are");
        cmd->add_option("--binaries", o.binaries, "file names to install")->delimiter(',');
        cmd->add_option("--cni-bin-dir", o.cni_bin_dir, "host CNI bin dir as mounted in this container");
        cmd->add_option("--cni-conf-dir", o.cni_conf_dir, "host CNI config dir as mounted in this container");
        cmd->add_flag("--skip-binaries", o.skip_binaries, "do not copy binaries (kubeconfig/modprobe only)");
        cmd->add_option("--service-account-dir", o.service_account_dir,
                        "token, ca.crt of the service account; \"\" = write no kubeconfig");
        cmd->add_option("--api-server", o.api_server,
                        "API server URL written into the kubeconfig (default https://$KUBERNETES_SERVICE_HOST:"
                        "$KUBERNETES_SERVICE_PORT)");
        cmd->add_option(
            "--ipam-namespace", o.ipam_namespace,
            "namespace of the IPPool objects (the kubeconfig's context namespace; whereabouts uses kube-system)");
        cmd->add_option("--kubeconfig-path", o.kubeconfig_rel, "kubeconfig path relative to --cni-conf-dir");
        cmd->add_option("--rdma-netns-mode", o.rdma_netns_mode,
                        "persist this RDMA netns mode for the next boot (modprobe.d option for ib_core)")
            ->check(CLI::IsMember({"exclusive", "shared"}));
        cmd->add_option("--modprobe-dir", o.modprobe_dir, "host /etc/modprobe.d as mounted in this container");
        cmd->add_flag("--watch", o.watch,
                      "keep running: re-check binaries and rewrite the kubeconfig when the token rotates");
        cmd->add_option("--interval", install_interval, "seconds between --watch rounds")->check(CLI::Range(1, 86400));
        cmd->callback([this, &status] {
            install_options.interval = std::chrono::seconds(install_interval);
            status = cli::install(install_options, std::cout, std::cerr);
        });
    }

    void add_doctor(CLI::App& app, int& status) {
        auto& o = doctor_options;
        auto* cmd = app.add_subcommand(
            "doctor",
            "check this node: RDMA ports, netns mode and its persistence, VFs, CNI binary and configs, IPAM "
            "kubeconfig, node slices and their publication backlog, container runtime memlock; exit 1 when something is wrong");
        cmd->add_flag("--json", o.json, "print a JSON report (with the effective node policy)");
        cmd->add_option("--root", o.root, "read the node's files under this directory (a mounted host root, tests)");
        cmd->add_option("--cni-bin-dir", o.cni_bin_dir, "CNI bin dir (under --root)");
        cmd->add_option("--cni-conf-dir", o.cni_conf_dir, "CNI config dir (under --root)");
        cmd->add_option(
            "--kubeconfig", o.kubeconfig,
            "IPAM kubeconfig (under --root), default <cni-conf-dir>/" + std::string(cli::kKubeconfigRelPath));
        cmd->add_option("--expect-vfs", expect_vfs, "PF=N: this PF should have N VFs (repeatable)");
        cmd->add_option("--expect-netns-mode", o.expect_netns_mode, "the RDMA netns mode this node should run")
            ->check(CLI::IsMember({"exclusive", "shared"}));
        cmd->add_option("--ipam-data-dir", o.ipam_data_dir,
                        "IPAM data dir (under --root) whose node slices and unpublished changes are checked");
        cmd->add_flag("--check-api", o.check_api,
                      "also reach the API server with the IPAM kubeconfig (and compare this node's slices with the "
                      "NodeSlicePools)");
        cmd->add_option("--api-timeout-ms", api_timeout_ms, "timeout of --check-api")->check(CLI::Range(100, 60000));
        cmd->callback([this, &status, cmd] {
            for (const auto& item : expect_vfs) {
                const auto eq = item.find('=');
                unsigned long n = 0;
                try {
                    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("");
                    std::size_t used = 0;
                    n = std::stoul(item.substr(eq + 1), &used);
                    if (used != item.size() - eq - 1) throw std::invalid_argument("");
                } catch (const std::exception&) {
                    throw CLI::ValidationError("--expect-vfs", "\"" + item + "\" is not PF=N (e.g. ens1f0=8)");
                }
                doctor_options.expect_vfs[item.substr(0, eq)] = static_cast<unsigned>(n);
            }
            (void)cmd;
            doctor_options.api_timeout = std::chrono::milliseconds(api_timeout_ms);
            status = doctor::run_doctor(doctor_options, std::cout, std::cerr);
        });
    }
};

}  // namespace rdmanet::cni::main
