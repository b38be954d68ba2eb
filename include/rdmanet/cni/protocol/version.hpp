#pragma once
#include <array>
#include <string_view>

namespace rdmanet::cni {

inline constexpr std::array<std::string_view, 5> kSupportedVersions = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
inline constexpr std::string_view kLatestVersion = "1.1.0";

bool is_supported_version(std::string_view version);
// Semantic comparison of "a.b.c" strings: <0, 0, >0. Malformed parts compare as 0.
int compare_versions(std::string_view a, std::string_view b);

}  // namespace rdmanet::cni
