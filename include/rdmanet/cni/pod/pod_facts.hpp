#pragma once
// What the pod's kernel says before an attachment's setup is planned: the reads a PodQuery asks
// for, done once (under the pod's lock when the query says so), so that the plan is made from data.
#include "rdmanet/cni/pod/pod_plan.hpp"
#include "rdmanet/netns/namespace.hpp"
#include "rdmanet/netns/rtnl.hpp"

namespace rdmanet::cni {

// Reads what `query` asks for from the pod (`pod` is opened inside `pod_ns`). A sysctl that cannot
// be read is recorded with its error (the plan refuses it); other kernel failures throw KernelError.
PodFacts read_pod_facts(const netns::NetNamespace& pod_ns, netns::Rtnl& pod, const PodQuery& query);

}  // namespace rdmanet::cni
