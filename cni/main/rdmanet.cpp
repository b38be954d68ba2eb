// rdmanet: the CNI plugin executable.
#include <iostream>

#include "rdmanet/cni/plugin/plugin.hpp"

int main() {
    std::ios::sync_with_stdio(false);
    return rdmanet::cni::run_plugin(rdmanet::cni::process_env_lookup(), std::cin, std::cout, std::cerr);
}
