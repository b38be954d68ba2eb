// nv-ipam IPPool / CIDRPool objects as a node reads them from the API server: any text -> a pool
// (and a claim whose invariants hold) or IpamError naming the field; see nvipam_pool_check.hpp.
#include "nvipam_pool_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    rdmanet::fuzz::check_nvipam_pool(rdmanet::fuzz::as_text(data, size));
    return 0;
}
