#pragma once
// Base64 as kubeconfigs and service-account tokens use it: the standard alphabet for *-data
// fields, the URL-safe one for JWT segments. One decoder so that the IPAM and `rdmanetctl doctor`
// cannot disagree about what a kubeconfig holds.
#include <optional>
#include <string>
#include <string_view>

namespace rdmanet::ipam::kube {

enum class Base64Alphabet { standard, url };

// Whitespace is ignored and padding is optional; any other character outside the alphabet, or
// data after padding, is nullopt.
std::optional<std::string> base64_decode(std::string_view in, Base64Alphabet alphabet = Base64Alphabet::standard);

// The standard alphabet with padding, as kubeconfig *-data fields hold it.
std::string base64_encode(std::string_view in);

}  // namespace rdmanet::ipam::kube
