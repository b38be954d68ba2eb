#include "rdmanet/cni/pod/pod_facts.hpp"

#include <algorithm>

#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::cni {

namespace {

// Who in the pod uses `table` already: the interface holding a rule's source address, or the
// interface of a route in it; nullopt when nothing does.
std::optional<std::string> table_user(netns::Rtnl& pod, unsigned table) {
    const auto links = pod.links();
    auto name_of = [&](int index) {
        for (const auto& l : links)
            if (l.index == index) return l.name;
        return std::string("interface #") + std::to_string(index);
    };
    for (const auto& rule : pod.rules()) {
        if (rule.table != table) continue;
        const std::string src = rule.src ? rule.src->str() : std::string("all");
        if (rule.src)
            for (const auto& l : links)
                for (const auto& a : pod.addresses(l.index))
                    if (a.address == rule.src->address) return l.name + " (rule from " + src + ")";
        return "the rule from " + src;
    }
    const auto tables = pod.route_tables();
    if (std::find(tables.begin(), tables.end(), table) == tables.end()) return std::nullopt;
    for (const auto& l : links)
        if (!pod.routes_in_table(l.index, table).empty()) return name_of(l.index) + " (its routes)";
    return std::string("routes of another interface");
}

}  // namespace

PodFacts read_pod_facts(const netns::NetNamespace& pod_ns, netns::Rtnl& pod, const PodQuery& query) {
    PodFacts facts;
    if (query.tables_in_use) {
        facts.route_tables = pod.route_tables();
        facts.rules = pod.rules();
    }
    if (query.fixed_table) facts.fixed_table_user = table_user(pod, *query.fixed_table);
    if (query.main_defaults)
        for (const auto& r : pod.routes(0))
            if (!r.dst && std::find(facts.main_default_families.begin(), facts.main_default_families.end(), r.family) ==
                              facts.main_default_families.end())
                facts.main_default_families.push_back(r.family);
    if (!query.sysctls.empty())
        netns::in_netns(pod_ns, [&] {
            for (const auto& path : query.sysctls) {
                PodFacts::SysctlValue read{path, std::nullopt, ""};
                try {
                    read.value = netns::read_sysctl(path);
                } catch (const netns::KernelError& e) {
                    read.error = e.what();
                }
                facts.sysctls.push_back(std::move(read));
            }
        });
    return facts;
}

}  // namespace rdmanet::cni
