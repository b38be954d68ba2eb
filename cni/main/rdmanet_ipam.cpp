// rdmanet-ipam: the embedded IPAM as a stand-alone CNI IPAM plugin.
#include <iostream>

#include "rdmanet/cni/plugin/ipam_plugin.hpp"

int main() {
    std::ios::sync_with_stdio(false);
    return rdmanet::cni::run_ipam_plugin(rdmanet::cni::process_env_lookup(), std::cin, std::cout, std::cerr);
}
