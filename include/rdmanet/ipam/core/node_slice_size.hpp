#pragma once
// The `node_slice_size` key (whereabouts v0.9's name and value form): the prefix length of the
// per-node slices a range is divided into, written "/26" or "26". Its presence turns node-slice
// mode on for the Kubernetes datastore. Pure.
#include <optional>
#include <string_view>

#include "rdmanet/ipam/core/range.hpp"

namespace rdmanet::ipam {

// The prefix length written in `text` ("/26" or "26"). Throws IpamError(invalid_config) naming the key when it
// is not a prefix length.
int parse_node_slice_size(std::string_view text);

// Throws IpamError(invalid_config) naming `field` (e.g. "ipam.ipRanges[1]") when slices of /`prefix` cannot
// divide `range`: a prefix beyond the family's address length, a slice larger than the range, or
// a slice too small to hold a usable address (/31, /32, /127, /128: every slice's first and last
// address are not handed out, as in any IPPool).
void check_node_slice_size(const Range& range, int prefix);

}  // namespace rdmanet::ipam
