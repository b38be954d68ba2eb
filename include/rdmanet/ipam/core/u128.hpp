#pragma once
// 128-bit offsets as text and bytes. Offsets are exact over the whole IPv6 space: whereabouts read
// them as signed 64-bit and dropped everything >= 2^63 (whereabouts #83); we never narrow them.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rdmanet/base/ip.hpp"

namespace rdmanet::ipam {

using base::uint128;
inline constexpr uint128 kU128Max = ~uint128{0};

// Decimal text, as the keys of whereabouts' IPPool allocations map ("0", "1", ...).
std::string to_decimal(uint128 value);
// Strict: only digits, no sign, no leading zeros (except "0" itself), no overflow. nullopt
// otherwise, so a malformed key is rejected loudly instead of read as some other offset.
std::optional<uint128> parse_decimal(std::string_view text);

// 16 bytes, most significant first: memcmp order equals numeric order, which is what lets SQLite
// compare and index offsets as BLOBs.
using Be128 = std::array<std::uint8_t, 16>;
Be128 to_be128(uint128 value);
uint128 from_be128(const std::uint8_t* bytes);

}  // namespace rdmanet::ipam
