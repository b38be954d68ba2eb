#pragma once
// Shared by the test_netns_*.cpp integration tests: an Rtnl bound to a test namespace, and
// errno extraction from a KernelError.
#include <memory>
#include <string>

#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/namespace.hpp"
#include "rdmanet/netns/rtnl.hpp"
#include "support/catch_ip.hpp"
#include "support/netns_fixture.hpp"

namespace rdmanet::test {

// An Rtnl whose socket lives in `ns`: the socket binds to the netns it is created in, so only
// the construction happens inside the guard; the test thread is back home afterwards.
inline std::unique_ptr<netns::Rtnl> rtnl_in(const ScopedNetns& ns) {
    netns::NetnsGuard guard(ns.open());
    return std::make_unique<netns::Rtnl>();
}

// The errno of the KernelError `fn` throws; 0 when it throws nothing. Other exceptions pass.
template <class Fn>
int errno_of(Fn&& fn) {
    try {
        fn();
    } catch (const netns::KernelError& e) {
        return e.errno_value();
    }
    return 0;
}

// The ifindex of `name` through `rtnl`; fails the test when the link is missing.
inline int index_of(netns::Rtnl& rtnl, const std::string& name) {
    auto link = rtnl.link_by_name(name);
    if (!link) throw std::runtime_error("test setup: no link " + name);
    return link->index;
}

}  // namespace rdmanet::test
