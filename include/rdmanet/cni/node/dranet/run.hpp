#pragma once
// `rdmanetctl dranet-provider`: the profile provider served on a unix socket until SIGTERM/SIGINT.
#include <ostream>
#include <string>

#include "rdmanet/cni/node/dranet/dranet_version.hpp"
#include "rdmanet/cni/node/kube.hpp"

namespace rdmanet::cni::node::dranet {

struct RunOptions {
    std::string socket_path;
    std::string profiles_dir;
    std::string state_dir;  // "" = <node policy's stateDir>/../dranet (next to rdmanet's state)
    std::string node_name;
    unsigned threads = 4;
    // --kubeconfig/--in-cluster/--namespace: the Kubernetes access of profiles that name no
    // kubeconfig of their own (ProviderOptions::default_kube). Off when neither is given.
    node::KubeOptions kube;
    // --dranet-version: the DRANET release whose NetworkConfig the answers are made for.
    DranetVersion dranet = kDefaultDranetVersion;
};

// Exit status: 0 after a stop signal, 1 when it cannot start (the reason on `err`).
int run_provider(const RunOptions& options, std::ostream& out, std::ostream& err);

}  // namespace rdmanet::cni::node::dranet
