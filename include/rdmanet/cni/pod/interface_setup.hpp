#pragma once
// The pod side of an attachment, inside the pod netns: per-interface sysctls, addresses, link
// state, routes (in the main table, or in a table of its own with source rules under
// policyRouting), waiting until IPv6 addresses are usable; their undo for DEL and their
// verification for CHECK. The decisions are in pod_plan.hpp, the kernel's answers they are made
// from in pod_facts.hpp; this applies them.
#include <chrono>
#include <functional>

#include "rdmanet/cni/config/pod_settings.hpp"
#include "rdmanet/cni/pod/pod_plan.hpp"
#include "rdmanet/cni/protocol/result.hpp"
#include "rdmanet/netns/namespace.hpp"
#include "rdmanet/netns/rtnl.hpp"

namespace rdmanet::cni {

struct PodInterfaceRequest {
    const netns::NetNamespace& pod_ns;
    netns::Rtnl& pod;  // opened inside pod_ns
    int index = 0;     // the link in the pod
    const std::string& ifname;
    const Result& ipam;
    int iface = 0;  // the IPs of `ipam` with this interface index (or none) are ours
    const PodSettings& settings;
    bool embedded_ipam = false;  // the addresses come from rdmanet-ipam (DAD may be skipped)
    // Called with what is about to change, before it changes (the caller saves it in the
    // attachment state), so that a DEL after a crash half-way undoes it.
    std::function<void(const PodSetupRecord&)> record;
    std::chrono::milliseconds dad_bound{10000};
};

// Plans the whole setup first, as data (pod_plan.hpp: from the request and what the pod's kernel
// says, read once), then applies it in one pass: the record, sysctls, addresses (IPv6 with
// IFA_F_NODAD unless DAD runs), link UP, IPv6 DAD finished, then routes and, under policyRouting,
// the rules. When the plan depends on what another ADD into the same pod can change (a free
// table, the main table's default route), the kernel is read and the plan applied under the
// pod's NetnsLock. An attachment never adds a default route to the main table when the main table
// has one of that family. Returns the record. Errors: Error(timeout) when DAD does not finish
// within dad_bound, Error(kernel_failure) for an address DAD found duplicate, KernelError for
// kernel refusals; the plan's errors (plan_pod_setup) before anything changed.
PodSetupRecord configure_pod_interface(const PodInterfaceRequest& request);

// Undoes `record` in the pod netns: rules, routes of the recorded table on the link (when it is
// still there), sysctls restored in reverse order. Missing pieces are not errors (DEL is
// idempotent); anything else throws after every step was tried.
void undo_pod_setup(const netns::NetNamespace& pod_ns, netns::Rtnl& pod, const std::string& ifname,
                    const PodSetupRecord& record);

// Throws Error naming the first address, route or rule of `expected` missing: addresses on the
// link; routes in the recorded table (policyRouting) or the main table; the recorded rules.
void check_pod_interface(netns::Rtnl& pod, int index, const std::string& ifname, const Result& expected, int iface,
                         const PodSettings& settings, const PodSetupRecord& record);

// Throws Error(invalid_config) naming the first sysctl ADD set on the interface (policyRouting's
// defaults, IPv6 on, accept_dad, the "sysctl" map) whose value in the pod now differs: the key,
// the value ADD set and the value now.
void check_pod_sysctls(const netns::NetNamespace& pod_ns, const PodSettings& settings, const std::string& ifname,
                       const std::vector<IpConfig>& ips, bool embedded_ipam);

}  // namespace rdmanet::cni
