#include "rdmanet/ipam/core/u128.hpp"

#include <algorithm>

namespace rdmanet::ipam {

std::string to_decimal(uint128 value) {
    if (value == 0) return "0";
    std::string out;
    while (value != 0) {
        out.push_back(static_cast<char>('0' + static_cast<int>(value % 10)));
        value /= 10;
    }
    std::reverse(out.begin(), out.end());
    return out;
}

std::optional<uint128> parse_decimal(std::string_view text) {
    if (text.empty() || text.size() > 39) return std::nullopt;  // 2^128-1 has 39 digits
    if (text.size() > 1 && text[0] == '0') return std::nullopt;
    uint128 value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        const auto digit = static_cast<unsigned>(c - '0');
        if (value > (kU128Max - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    return value;
}

Be128 to_be128(uint128 value) {
    Be128 out{};
    for (int i = 15; i >= 0; --i) {
        out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value & 0xff);
        value >>= 8;
    }
    return out;
}

uint128 from_be128(const std::uint8_t* bytes) {
    uint128 value = 0;
    for (int i = 0; i < 16; ++i) value = (value << 8) | bytes[i];
    return value;
}

}  // namespace rdmanet::ipam
