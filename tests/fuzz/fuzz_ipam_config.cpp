// The `ipam` block (range, range_start/end, exclude, ipRanges, routes ...): any JSON object →
// an IpamConfig or an IPAM/CNI error; strict and lenient parsing alike.
#include "fuzz_support.hpp"

#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/ipam/core/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    rdmanet::fuzz::expect_clean_rejection([&] {
        const auto json = rdmanet::cni::parse_json_bounded(rdmanet::fuzz::as_text(data, size));
        (void)rdmanet::ipam::parse_ipam_config(json, rdmanet::ipam::Strictness::strict);
    });
    rdmanet::fuzz::expect_clean_rejection([&] {
        const auto json = rdmanet::cni::parse_json_bounded(rdmanet::fuzz::as_text(data, size));
        (void)rdmanet::ipam::parse_ipam_config(json, rdmanet::ipam::Strictness::lenient);
    });
    return 0;
}
