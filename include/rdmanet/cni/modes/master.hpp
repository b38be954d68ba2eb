#pragma once
// The master of a virtual child (macvlan, IPoIB child): one lookup for every child mode.
#include <string>
#include <string_view>

#include "rdmanet/netns/rtnl.hpp"

namespace rdmanet::cni {

// The host link a virtual child is created on, by the configuration's "master". Throws
// device_not_found naming `kind` ("macvlan", "IPoIB") with `fix` (how to find a valid name) when
// the host namespace has no such link.
netns::LinkInfo find_master(netns::Rtnl& host, std::string_view kind, const std::string& master,
                            const std::string& fix);

}  // namespace rdmanet::cni
