// Kubernetes API responses: an IPPool body as the API server (or anything impersonating it)
// returns it, read by the datastore's scanner without a JSON tree (wire.hpp parse_pool_body).
// Any text -> a pool or IpamError; and the scanner must never accept what is not JSON at all
// (checked against nlohmann's parser), or a truncated or corrupt answer could pass as a pool.
#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"

#include "rdmanet/ipam/kube/wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text = rdmanet::fuzz::as_text(data, size);
    bool accepted = false;
    rdmanet::fuzz::expect_clean_rejection([&] {
        const auto pool = rdmanet::ipam::kube::parse_pool_body(text, "fuzz");
        (void)pool.dump.allocations.size();
        accepted = true;
    });
    if (accepted) {
        try {
            (void)nlohmann::json::parse(text.begin(), text.end());
        } catch (const nlohmann::json::out_of_range&) {
            // A number beyond a double (1.5e923) is grammatical JSON (RFC 8259) that nlohmann
            // refuses to hold; the scanner skips it unread in fields it ignores. Not a mismatch.
        } catch (const nlohmann::json::parse_error&) {
            __builtin_trap();  // the scanner accepted text that is not JSON
        }
    }
    return 0;
}
