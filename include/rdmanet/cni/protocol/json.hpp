#pragma once
// Parsing of untrusted JSON with a nesting bound: nlohmann's recursive walks (dump, copy,
// compare) overflow the stack on very deep input, so depth is checked before anything walks it.
#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rdmanet::cni {

inline constexpr std::size_t kMaxJsonDepth = 64;

// Throws Error(decode_failure) on malformed JSON or nesting deeper than max_depth, with the
// parser's position in the message.
nlohmann::json parse_json_bounded(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

}  // namespace rdmanet::cni
