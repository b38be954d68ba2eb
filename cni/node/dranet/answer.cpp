// The NetworkConfig the provider answers with: see answer.hpp.
#include "rdmanet/cni/node/dranet/answer.hpp"

#include <linux/rtnetlink.h>

#include "rdmanet/cni/pod/pod_plan.hpp"

namespace rdmanet::cni::node::dranet {

namespace {

RouteConfig to_wire(const netns::RouteInfo& r) {
    RouteConfig out;
    const bool v6 = r.family == AF_INET6 || (r.gateway && !r.gateway->is_v4()) || (r.dst && !r.dst->address.is_v4());
    out.destination = r.dst ? r.dst->str() : (v6 ? "::/0" : "0.0.0.0/0");
    if (r.gateway) out.gateway = r.gateway->str();
    if (r.prefsrc) out.source = r.prefsrc->str();
    // DRANET takes universe routes only through a gateway; an on-link route is scope link.
    out.scope = (r.scope == RT_SCOPE_LINK || !r.gateway) ? kScopeLink : 0;
    out.table = r.table == RT_TABLE_MAIN ? 0 : r.table;
    return out;
}

}  // namespace

NetworkConfigAnswer plan_answer(const Profile& profile, const std::vector<IpConfig>& ips,
                                const std::vector<base::Route>& routes, const std::vector<unsigned>& tables) {
    NetworkConfigAnswer answer;
    for (const auto& ip : ips) answer.addresses.push_back(ip.address.str());
    answer.arp_ignore = profile.arp_ignore;
    answer.arp_announce = profile.arp_announce;
    const auto& pr = profile.pod.policy_routing;
    if (!pr) {
        for (const auto& r : plan_main_routes(ips, routes, 0)) answer.routes.push_back(to_wire(r));
        return answer;
    }
    const unsigned priority = pr->priority.value_or(kDefaultRulePriority);
    for (std::size_t i = 0; i < ips.size() && i < tables.size(); ++i) {
        const std::vector<IpConfig> one{ips[i]};
        // The routes of this address's family only: another family's route needs another address.
        std::vector<base::Route> own;
        for (const auto& r : routes)
            if (r.dst.address.family() == ips[i].address.address.family()) own.push_back(r);
        for (const auto& r : plan_table_routes(one, own, tables[i], 0, pr->add_source_hints))
            answer.routes.push_back(to_wire(r));
        for (const auto& rule : plan_rules(one, tables[i], priority))
            answer.rules.push_back(
                RuleConfig{rule.priority.value_or(priority), rule.src ? rule.src->str() : "", rule.table});
    }
    return answer;
}

}  // namespace rdmanet::cni::node::dranet
