#pragma once
// Addresses, routes and link state of our interface inside the pod netns (like the reference
// plugins' ipam.ConfigureIface), and their verification for CHECK.
#include "rdmanet/cni/protocol/result.hpp"
#include "rdmanet/netns/namespace.hpp"
#include "rdmanet/netns/rtnl.hpp"

namespace rdmanet::cni {

// Applies every IP of `ipam` whose interface index is `iface` (or unset), sets the link UP, then
// adds `ipam.routes` (a route without gw uses the gateway of the first address of its family).
// IPv6 addresses skip DAD so the pod can use them at once. Must run with `pod` opened inside the
// pod netns; sysctls are written inside `pod_ns`.
void configure_pod_interface(const netns::NetNamespace& pod_ns, netns::Rtnl& pod, int index,
                             const std::string& ifname, const Result& ipam, int iface);

// Throws Error naming the first address or route of `expected` missing on the link.
void check_pod_interface(netns::Rtnl& pod, int index, const std::string& ifname, const Result& expected,
                         int iface);

}  // namespace rdmanet::cni
