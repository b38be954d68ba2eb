// Test builds only (RDMANET_FAILPOINTS): see failpoint.hpp.
#include "rdmanet/cni/failpoint.hpp"

#ifdef RDMANET_FAILPOINTS
#include <csignal>
#include <cstdlib>

namespace rdmanet::cni {

void failpoint(Failpoint fp) {
    const char* wanted = std::getenv("RDMANET_FAILPOINT");
    if (wanted && failpoint_name(fp) == wanted) std::raise(SIGKILL);
}

}  // namespace rdmanet::cni
#endif
