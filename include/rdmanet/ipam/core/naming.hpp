#pragma once
// whereabouts' object names (docs/ipam.md, Wire format), shared by the pool inspection output and the
// Kubernetes datastore so that both name pools exactly as whereabouts does.
#include <string>
#include <string_view>

#include "rdmanet/base/ip.hpp"

namespace rdmanet::ipam {

// normalizeRange: a trailing ':' gets a '0', then ':' and '/' become '-'.
std::string normalize_range_name(std::string_view text);
// IPPool: [<network_name>-]<normalize(range)>, e.g. "blue-10.10.0.0-16", "fd00---64".
std::string pool_object_name(std::string_view network_name, const base::IpNetwork& range);
// OverlappingRangeIPReservation: [<network_name>-]<ip with ':' -> '-'>, e.g. "fd00--5", "fd00--0".
std::string reservation_object_name(std::string_view network_name, const base::IpAddress& ip);

}  // namespace rdmanet::ipam
