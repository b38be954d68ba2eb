// Base64 decoding: see base64.hpp.
#include "rdmanet/ipam/kube/base64.hpp"

namespace rdmanet::ipam::kube {

std::optional<std::string> base64_decode(std::string_view in, Base64Alphabet alphabet) {
    const char c62 = alphabet == Base64Alphabet::url ? '-' : '+';
    const char c63 = alphabet == Base64Alphabet::url ? '_' : '/';
    auto value = [&](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == c62) return 62;
        if (c == c63) return 63;
        return -1;
    };
    std::string out;
    unsigned buffer = 0;
    int bits = 0;
    bool padded = false;
    for (char c : in) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            padded = true;
            continue;
        }
        if (padded) return std::nullopt;   // data after padding
        const int v = value(c);
        if (v < 0) return std::nullopt;
        buffer = (buffer << 6) | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((buffer >> bits) & 0xff));
        }
    }
    return out;
}

}  // namespace rdmanet::ipam::kube
