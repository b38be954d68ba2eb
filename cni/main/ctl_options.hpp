#pragma once
// The options several of rdmanetctl's subcommands share: the local IPAM store's directory and the
// Kubernetes datastore's access. Included by cni/main/rdmanetctl.cpp's command files only.
#include <string>

#include <CLI/CLI.hpp>

#include "rdmanet/cni/node/kube.hpp"
#include "rdmanet/ipam/core/config.hpp"

namespace rdmanet::cni::main {

inline void add_data_dir(CLI::App& cmd, std::string& data_dir) {
    cmd.add_option("--data-dir", data_dir,
                   "directory of the local IPAM store (ipam.data_dir), default " + std::string(ipam::kDefaultDataDir));
}

// The Kubernetes datastore (IPPools through the API) instead of the local store.
// One access or the other, and --namespace only with one of them: a usage error (exit 2) rather
// than a flag that is silently ignored.
inline void add_kube(CLI::App& cmd, node::KubeOptions& kube) {
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

}  // namespace rdmanet::cni::main
