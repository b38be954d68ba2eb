#pragma once
// rdmanetctl agent: the node-local repair of attachments whose pod sandbox is gone (repair.hpp)
// as the DaemonSet's long-running agent (`rdmanetctl reconcile --local`, cni/cli/, is the same
// repair as a one-shot command). Plain functions (no CLI11) so tests and the fake-kernel test
// binary can call them.
#include <iosfwd>
#include <string>

#include "rdmanet/cni/node/kube.hpp"
#include "rdmanet/cni/node/repair.hpp"
#include "rdmanet/cni/plugin/plugin.hpp"
#include "rdmanet/ipam/core/config.hpp"

namespace rdmanet::cni::node {

// `rdmanetctl agent`: the DaemonSet's long-running node agent. Every `interval_seconds` it takes
// over the plugin's call records, runs the repair pass (as reconcile --local) and, with the
// Kubernetes datastore and a node name, lists this node's pods (one field-selected request,
// spec.nodeName=NODE, so its cost does not grow with pods on other nodes) to undo attachments
// whose pod was deleted while its sandbox lingers, and publishes the node-slice changes an
// API-server outage held back in `ipam_data_dir`, and re-checks that the node still holds its
// node slices (recording released ones as revoked). With the Kubernetes datastore and the DRANET
// provider's claim records present it also releases, through the provider, the claims whose
// ResourceClaim is gone (cni/node/dranet/claim_gc.hpp). SIGTERM/SIGINT end it promptly with status 0.
struct AgentOptions {
    int interval_seconds = 60;
    // "" = no metrics endpoint; else HOST:PORT to serve GET /metrics on (port 0: any free port,
    // printed as "metrics on HOST:PORT").
    std::string metrics_address;
    // The local IPAM store: its pools' metrics, and (with kube) its node-slice backlog.
    std::string ipam_data_dir = std::string(ipam::kDefaultDataDir);
    KubeOptions kube;
    std::string node_name;        // $NODE_NAME in the DaemonSet; required with kube
    int pod_grace_seconds = 120;  // a pod missing from the API for this long is treated as gone
    int max_passes = 0;           // 0 = until signalled (tests use a bound)
    // The DRANET provider's --state-dir ("" = its default: dranet/ next to the node policy's
    // stateDir) and --socket: the claim GC runs when its claims.json exists.
    std::string dranet_state_dir;
    std::string dranet_socket = "/run/rdmanet/dranet.sock";
    KernelServices services;  // null members: the real kernel
};

int run_agent(const AgentOptions& options, std::ostream& out, std::ostream& err);

}  // namespace rdmanet::cni::node
