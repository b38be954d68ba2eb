// CNI_ARGS from the runtime/Multus: must never throw, whatever the bytes.
#include "fuzz_support.hpp"

#include "rdmanet/cni/protocol/args.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto args = rdmanet::cni::parse_cni_args(rdmanet::fuzz::as_text(data, size));
    (void)args.pod_namespace();
    (void)args.pod_name();
    (void)args.mac();
    (void)args.ips();
    (void)args.guid();
    return 0;
}
