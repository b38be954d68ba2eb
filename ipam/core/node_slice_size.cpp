// node_slice_size: see node_slice_size.hpp.
#include "rdmanet/ipam/core/node_slice_size.hpp"

#include <string>

#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::ipam {

int parse_node_slice_size(std::string_view text) {
    const std::string shown = "ipam.node_slice_size \"" + std::string(text) + "\"";
    std::string_view digits = text;
    if (!digits.empty() && digits.front() == '/') digits.remove_prefix(1);
    if (digits.empty() || digits.size() > 3) {
        config_error(shown + " is not a prefix length: write it as \"/26\" (IPv4) or \"/120\" (IPv6)");
    }
    int prefix = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') {
            config_error(shown + " is not a prefix length: write it as \"/26\" (IPv4) or \"/120\" (IPv6)");
        }
        prefix = prefix * 10 + (c - '0');
    }
    if (prefix > 128) config_error(shown + " is not a prefix length: at most /32 for IPv4 and /128 for IPv6");
    return prefix;
}

void check_node_slice_size(const Range& range, int prefix) {
    const int bits = range.cidr.address.bits();
    const std::string slice = "ipam.node_slice_size \"/" + std::to_string(prefix) + "\"";
    const std::string of = range.field + " " + range.cidr.str();
    if (prefix > bits) {
        config_error(slice + " is not a prefix length of " + of + " (an IPv" + (bits == 32 ? "4" : "6") +
                     " range has at most /" + std::to_string(bits) + ")");
    }
    if (prefix < range.cidr.prefix) {
        config_error(slice + " is larger than " + of + ": a slice must be part of the range (a prefix length of /" +
                     std::to_string(range.cidr.prefix) + " or more)");
    }
    if (bits - prefix < 2) {
        config_error(slice + " leaves no usable address in a slice of " + of +
                     ": a slice's first and last address "
                     "are never handed out, use at most /" +
                     std::to_string(bits - 2));
    }
}

}  // namespace rdmanet::ipam
