#pragma once
// Shared by the libFuzzer targets: the exceptions a parser is ALLOWED to throw for bad input.
// Anything else escaping a parser (nlohmann::json::type_error, std::out_of_range, a bad
// std::optional access ...) is a bug: it would reach the skel's catch-all and turn into a vague
// error, or worse crash, so the target lets it propagate and libFuzzer reports it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse`, swallowing only the documented input errors.
template <typename F>
void expect_clean_rejection(F&& parse) {
    try {
        parse();
    } catch (const rdmanet::cni::Error&) {
    } catch (const rdmanet::ipam::IpamError&) {
    }
}

}  // namespace rdmanet::fuzz
