#pragma once
// `rdmanetctl dranet-provider`: the profile provider served on a unix socket until SIGTERM/SIGINT.
#include <ostream>
#include <string>

namespace rdmanet::cni::node::dranet {

struct RunOptions {
    std::string socket_path;
    std::string profiles_dir;
    std::string state_dir;    // "" = <node policy's stateDir>/../dranet (next to rdmanet's state)
    std::string node_name;
    unsigned threads = 4;
};

// Exit status: 0 after a stop signal, 1 when it cannot start (the reason on `err`).
int run_provider(const RunOptions& options, std::ostream& out, std::ostream& err);

}  // namespace rdmanet::cni::node::dranet
