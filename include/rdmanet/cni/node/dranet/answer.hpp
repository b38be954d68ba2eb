#pragma once
// What the provider answers DRANET for one device, from what the IPAM gave it: pure. The routes
// and rules come from the CNI path's policyRouting planner (cni/pod/pod_plan.hpp), applied to each
// address with a table of its own, so that every address's gateway lives in its own table with a
// rule "from <address> lookup <table>" choosing it.
#include <vector>

#include "rdmanet/base/route.hpp"
#include "rdmanet/cni/node/dranet/profile.hpp"
#include "rdmanet/cni/node/dranet/wire.hpp"
#include "rdmanet/cni/protocol/result.hpp"

namespace rdmanet::cni::node::dranet {

// The rules' priority when the profile gives none: what the kernel picks for the first rule added
// to a fresh namespace (just before the main table's 32766), written out because DRANET's rule
// without a priority would be added at priority 0, ahead of the local table.
inline constexpr unsigned kDefaultRulePriority = 32765;

// `tables`: one per address of `ips` with policyRouting, ignored without. `routes`: the IPAM's.
NetworkConfigAnswer plan_answer(const Profile& profile, const std::vector<IpConfig>& ips,
                                const std::vector<base::Route>& routes, const std::vector<unsigned>& tables);

}  // namespace rdmanet::cni::node::dranet
