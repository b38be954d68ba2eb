#pragma once
// Parsing of untrusted JSON for the CNI side: base::parse_json_limited's depth and size limits,
// reported as a CNI decode failure.
#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "rdmanet/base/json_limits.hpp"

namespace rdmanet::cni {

inline constexpr std::size_t kMaxJsonDepth = base::kMaxJsonDepth;

// Throws Error(decode_failure) on malformed JSON, nesting deeper than max_depth or text longer
// than base::kMaxJsonBytes, with the parser's position in the message.
nlohmann::json parse_json_bounded(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

}  // namespace rdmanet::cni
