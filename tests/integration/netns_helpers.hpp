#pragma once
// Shared by the integration tests on namespaces: an Rtnl bound to a test namespace, a node/pod
// namespace pair for backend rigs, and errno extraction from a KernelError.
#include <memory>
#include <string>
#include <string_view>

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

// A simulated node and pod for the backend rigs: two fresh namespaces, opened, each with its
// rtnetlink socket. Rigs derive from it first, so the namespaces exist before their own members
// (veths placed in `host`, the cni::Kernel over these handles) are built.
struct HostAndPod {
    HostAndPod(std::string_view host_tag, std::string_view pod_tag) : host(host_tag), pod(pod_tag) {}
    ScopedNetns host, pod;
    netns::NetNamespace host_ns = host.open();
    netns::NetNamespace pod_ns = pod.open();
    std::unique_ptr<netns::Rtnl> host_rtnl = rtnl_in(host);
    std::unique_ptr<netns::Rtnl> pod_rtnl = rtnl_in(pod);
};

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
