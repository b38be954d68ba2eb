// prevResult (and delegated IPAM results): any JSON → a Result or a CNI error, and a parsed
// Result must convert to every supported version without throwing.
#include "fuzz_support.hpp"

#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/cni/protocol/result.hpp"
#include "rdmanet/cni/protocol/version.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    rdmanet::fuzz::expect_clean_rejection([&] {
        const auto json = rdmanet::cni::parse_json_bounded(rdmanet::fuzz::as_text(data, size));
        const auto result = rdmanet::cni::result_from_json(json);
        for (const char* version : {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}) {
            (void)rdmanet::cni::result_to_json(result, version).dump();
        }
    });
    return 0;
}
