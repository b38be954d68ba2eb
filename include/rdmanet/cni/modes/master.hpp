#pragma once
// The master of a virtual child (macvlan, IPoIB child): one lookup and one admission for every
// child mode.
#include <string>
#include <string_view>

#include "rdmanet/cni/modes/backend.hpp"
#include "rdmanet/netns/rtnl.hpp"

namespace rdmanet::cni {

// The host link a virtual child is created on, by the configuration's "master". Throws
// device_not_found naming `kind` ("macvlan", "IPoIB") with `fix` (how to find a valid name) when
// the host namespace has no such link.
netns::LinkInfo find_master(netns::Rtnl& host, std::string_view kind, const std::string& master,
                            const std::string& fix);

// ADD of a child on `master`, before anything is created: the node policy's checks of the master
// (loopback never, the uplink only when allowed), the child's `mtu` against the master's (0
// inherits it; invalid_config above it), and RDMA isolation (a child never takes its master's RDMA
// device along: `required` is an error, exclusive mode a warning).
void admit_child(const AddRequest& req, const netns::LinkInfo& master, unsigned mtu);

}  // namespace rdmanet::cni
