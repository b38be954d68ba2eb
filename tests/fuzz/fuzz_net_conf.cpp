// The network configuration on stdin (Multus/libcni/NAD author controlled), for every verb:
// ADD/CHECK are strict, DEL/GC lenient, and both must only ever fail with a CNI error.
#include "fuzz_support.hpp"

#include "rdmanet/cni/modes/net_conf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using rdmanet::cni::Command;
    const auto text = rdmanet::fuzz::as_text(data, size);
    for (Command command : {Command::add, Command::del, Command::check, Command::gc}) {
        rdmanet::fuzz::expect_clean_rejection([&] { (void)rdmanet::cni::parse_net_conf(text, command); });
    }
    rdmanet::fuzz::expect_clean_rejection([&] { (void)rdmanet::cni::parse_ipam_plugin_conf(text, Command::add); });
    (void)rdmanet::cni::reply_version(text);  // documented never to throw
    return 0;
}
