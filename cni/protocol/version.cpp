#include "rdmanet/cni/protocol/version.hpp"

#include <algorithm>
#include <charconv>

namespace rdmanet::cni {

bool is_supported_version(std::string_view version) {
    return std::find(kSupportedVersions.begin(), kSupportedVersions.end(), version) != kSupportedVersions.end();
}

namespace {

// Next dot-separated component of `rest` as a number (0 when missing or not a number).
long next_component(std::string_view& rest) {
    auto dot = rest.find('.');
    std::string_view part = rest.substr(0, dot);
    rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
    long value = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc{} || end != part.data() + part.size() || value < 0) return 0;
    return value;
}

}  // namespace

int compare_versions(std::string_view a, std::string_view b) {
    for (int i = 0; i < 3; ++i) {
        long x = next_component(a), y = next_component(b);
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

}  // namespace rdmanet::cni
