#include "rdmanet/cni/pod/pod_plan.hpp"

#include <algorithm>
#include <linux/rtnetlink.h>

#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/policy/checks.hpp"
#include "rdmanet/cni/protocol/error.hpp"

namespace rdmanet::cni {

namespace {

std::optional<base::IpAddress> gateway_of_family(const std::vector<IpConfig>& ips, base::IpAddress::Family family) {
    for (const auto& ip : ips)
        if (ip.gateway && ip.gateway->family() == family) return ip.gateway;
    return std::nullopt;
}

netns::RouteInfo to_route_info(const Route& route, const std::vector<IpConfig>& ips, int index) {
    netns::RouteInfo info;
    if (route.dst.prefix != 0) info.dst = route.dst.masked();
    info.family = route.dst.address.af();
    info.gateway = route.gw;
    if (!info.gateway) info.gateway = gateway_of_family(ips, route.dst.address.family());
    info.ifindex = index;
    info.priority = route.priority.value_or(0);
    if (route.table) info.table = *route.table;
    if (route.scope) info.scope = static_cast<int>(*route.scope);
    info.mtu = route.mtu.value_or(0);
    info.advmss = route.advmss.value_or(0);
    return info;
}

void add_write(std::vector<SysctlWrite>& writes, std::string path, std::string value, std::string origin) {
    for (auto& w : writes)
        if (w.path == path) {
            w.value = std::move(value);
            w.origin = std::move(origin);
            return;
        }
    writes.push_back(SysctlWrite{std::move(path), std::move(value), std::move(origin)});
}

}  // namespace

nlohmann::json PodSetupRecord::to_json() const {
    nlohmann::json j = nlohmann::json::object();
    if (table) j["table"] = *table;
    auto rules_json = nlohmann::json::array();
    for (const auto& r : rules) {
        nlohmann::json rule = {{"src", r.src ? r.src->str() : ""}, {"table", r.table}};
        if (r.priority) rule["priority"] = *r.priority;
        rules_json.push_back(rule);
    }
    j["rules"] = rules_json;
    auto sysctls_json = nlohmann::json::array();
    for (const auto& s : sysctls) sysctls_json.push_back({{"path", s.path}, {"original", s.original}});
    j["sysctls"] = sysctls_json;
    return j;
}

PodSetupRecord PodSetupRecord::from_json(const nlohmann::json& j) {
    PodSetupRecord record;
    if (!j.is_object()) return record;
    if (auto it = j.find("table"); it != j.end() && it->is_number_unsigned()) record.table = it->get<unsigned>();
    if (auto it = j.find("rules"); it != j.end() && it->is_array())
        for (const auto& r : *it) {
            if (!r.is_object() || !r.contains("src") || !r["src"].is_string() || !r.contains("table") ||
                !r["table"].is_number_unsigned())
                continue;
            auto src = base::IpNetwork::parse(r["src"].get<std::string>());
            if (!src) continue;
            netns::RuleInfo rule;
            rule.family = src->address.af();
            rule.src = src;
            rule.table = r["table"].get<unsigned>();
            if (r.contains("priority") && r["priority"].is_number_unsigned())
                rule.priority = r["priority"].get<unsigned>();
            record.rules.push_back(rule);
        }
    if (auto it = j.find("sysctls"); it != j.end() && it->is_array())
        for (const auto& s : *it) {
            if (!s.is_object() || !s.contains("path") || !s["path"].is_string() || !s.contains("original") ||
                !s["original"].is_string())
                continue;
            record.sysctls.push_back(Sysctl{s["path"].get<std::string>(), s["original"].get<std::string>()});
        }
    return record;
}

std::vector<IpConfig> own_ips(const Result& ipam, int iface) {
    std::vector<IpConfig> ips;
    for (const auto& ip : ipam.ips)
        if (!ip.interface || *ip.interface == iface) ips.push_back(ip);
    return ips;
}

void check_pod_settings(const PodSettings& settings, const std::string& ifname, const NodePolicy& policy) {
    for (const auto& entry : settings.sysctl) {
        if (entry.iface != "IFNAME" && entry.iface != ifname)
            throw Error(ErrorCode::invalid_config,
                        "sysctl." + entry.key + " names interface \"" + entry.iface + "\", not this attachment's \"" +
                            ifname + "\"",
                        "write IFNAME in place of the interface name: " + entry.tree + ".IFNAME." + entry.leaf);
        check_sysctl_allowed(policy, entry.tree + ".IFNAME." + entry.leaf, entry.key);
    }
}

std::vector<SysctlWrite> plan_sysctls(const PodSettings& settings, const std::string& ifname, bool has_v6,
                                      bool skip_dad_on_v6) {
    std::vector<SysctlWrite> writes;
    const std::string v4 = "net/ipv4/conf/" + ifname + "/";
    const std::string v6 = "net/ipv6/conf/" + ifname + "/";
    if (settings.policy_routing) {
        // Answer ARP only for addresses of this interface, from this interface's address, and
        // accept packets whose reverse path leaves through another rail (docs/configuration.md).
        add_write(writes, v4 + "arp_ignore", "1", "policyRouting default");
        add_write(writes, v4 + "arp_announce", "2", "policyRouting default");
        add_write(writes, v4 + "rp_filter", "2", "policyRouting default");
    }
    if (has_v6) {
        // Before the addresses: with DAD skipped, the link-local address the kernel makes when
        // IPv6 comes up is not tentative either.
        if (skip_dad_on_v6) add_write(writes, v6 + "accept_dad", "0", "ipv6.dad");
        add_write(writes, v6 + "disable_ipv6", "0", "IPv6 address on the interface");
    }
    for (const auto& entry : settings.sysctl)
        add_write(writes, sysctl_path(entry, ifname), entry.value, "sysctl." + entry.key);
    return writes;
}

bool skip_dad(const PodSettings& settings, bool embedded_ipam) {
    if (settings.ipv6_dad) return !*settings.ipv6_dad;
    return embedded_ipam;
}

std::vector<unsigned> choose_free_tables(const std::vector<unsigned>& route_tables,
                                         const std::vector<netns::RuleInfo>& rules, std::size_t count) {
    auto used = [&](unsigned t) {
        return std::find(route_tables.begin(), route_tables.end(), t) != route_tables.end() ||
               std::any_of(rules.begin(), rules.end(), [&](const netns::RuleInfo& r) { return r.table == t; });
    };
    std::vector<unsigned> chosen;
    for (unsigned t = kFirstAutoTable; t != 0 && chosen.size() < count; ++t) {
        if (t >= RT_TABLE_DEFAULT && t <= RT_TABLE_LOCAL) continue;
        if (!used(t)) chosen.push_back(t);
    }
    if (chosen.size() < count)
        throw Error(ErrorCode::try_again, "policyRouting: every routing table of the pod is in use");
    return chosen;
}

unsigned choose_free_table(const std::vector<unsigned>& route_tables, const std::vector<netns::RuleInfo>& rules) {
    return choose_free_tables(route_tables, rules, 1).front();
}

std::vector<netns::RuleInfo> plan_rules(const std::vector<IpConfig>& ips, const std::vector<unsigned>& tables,
                                        std::optional<unsigned> priority) {
    std::vector<netns::RuleInfo> rules;
    for (std::size_t i = 0; i < ips.size() && i < tables.size(); ++i) {
        const auto& ip = ips[i];
        netns::RuleInfo rule;
        rule.family = ip.address.address.af();
        rule.src = base::IpNetwork{ip.address.address, ip.address.address.bits()};
        rule.table = tables[i];
        rule.priority = priority;
        rules.push_back(rule);
    }
    return rules;
}

std::vector<netns::RuleInfo> plan_rules(const std::vector<IpConfig>& ips, unsigned table,
                                        std::optional<unsigned> priority) {
    return plan_rules(ips, std::vector<unsigned>(ips.size(), table), priority);
}

std::vector<unsigned> PodSetupRecord::tables() const {
    std::vector<unsigned> out;
    auto add = [&](unsigned t) {
        if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    };
    if (table) add(*table);
    for (const auto& r : rules) add(r.table);
    return out;
}

std::vector<unsigned> tables_of(const std::vector<IpConfig>& ips, const PodSetupRecord& record) {
    std::vector<unsigned> tables;
    for (const auto& ip : ips) {
        const base::IpNetwork host{ip.address.address, ip.address.address.bits()};
        const auto rule = std::find_if(record.rules.begin(), record.rules.end(),
                                       [&](const netns::RuleInfo& r) { return r.src == host; });
        tables.push_back(rule != record.rules.end() ? rule->table : record.table.value_or(kFirstAutoTable));
    }
    return tables;
}

std::optional<std::string> fixed_table_gateway_conflict(const std::vector<IpConfig>& ips) {
    for (std::size_t i = 0; i < ips.size(); ++i)
        for (std::size_t j = i + 1; j < ips.size(); ++j)
            if (ips[i].gateway && ips[j].gateway && ips[i].gateway->family() == ips[j].gateway->family() &&
                *ips[i].gateway != *ips[j].gateway)
                return "addresses " + ips[i].address.str() + " (gateway " + ips[i].gateway->str() + ") and " +
                       ips[j].address.str() + " (gateway " + ips[j].gateway->str() + ")";
    return std::nullopt;
}

std::vector<netns::RouteInfo> plan_table_routes(const std::vector<IpConfig>& ips, const std::vector<unsigned>& tables,
                                                const std::vector<Route>& routes, int index, bool add_source_hints) {
    std::vector<netns::RouteInfo> planned;
    auto push = [&](netns::RouteInfo r) {
        const bool dup = std::any_of(planned.begin(), planned.end(), [&](const netns::RouteInfo& p) {
            return p.table == r.table && p.dst == r.dst && p.family == r.family && p.priority == r.priority;
        });
        if (!dup) planned.push_back(std::move(r));
    };
    const std::size_t n = std::min(ips.size(), tables.size());
    // Per address, in its own table: its subnet (scope link, the address as source hint) and a
    // default route via its own gateway.
    for (std::size_t i = 0; i < n; ++i) {
        const auto& ip = ips[i];
        netns::RouteInfo subnet;
        subnet.family = ip.address.address.af();
        subnet.dst = ip.address.masked();
        subnet.ifindex = index;
        subnet.table = tables[i];
        subnet.scope = RT_SCOPE_LINK;
        subnet.prefsrc = ip.address.address;
        push(subnet);
    }
    for (std::size_t i = 0; i < n; ++i) {
        const auto& ip = ips[i];
        if (!ip.gateway) continue;
        netns::RouteInfo def;
        def.family = ip.gateway->af();
        def.gateway = ip.gateway;
        def.ifindex = index;
        def.table = tables[i];
        if (add_source_hints) def.prefsrc = ip.address.address;
        push(def);
    }
    // The IPAM's routes: one through a gateway goes into the table of each address whose subnet
    // holds that gateway (or, when none does, of the first address of its family, where the
    // kernel refuses it as off-link); one without a gateway into every table of its family, via
    // that address's own gateway.
    for (const auto& route : routes) {
        const auto family = route.dst.address.family();
        std::vector<std::size_t> owners;
        for (std::size_t i = 0; i < n; ++i) {
            if (ips[i].address.address.family() != family) continue;
            if (!route.gw || ips[i].address.contains(*route.gw)) owners.push_back(i);
        }
        if (owners.empty())
            for (std::size_t i = 0; i < n && owners.empty(); ++i)
                if (ips[i].address.address.family() == family) owners.push_back(i);
        if (owners.empty() && n > 0) owners.push_back(0);
        for (const auto i : owners) {
            auto info = to_route_info(route, ips, index);
            if (!route.gw) info.gateway = ips[i].gateway;
            info.table = tables[i];
            if (add_source_hints) info.prefsrc = ips[i].address.address;
            push(info);
        }
    }
    return planned;
}

std::vector<netns::RouteInfo> plan_table_routes(const std::vector<IpConfig>& ips, const std::vector<Route>& routes,
                                                unsigned table, int index, bool add_source_hints) {
    return plan_table_routes(ips, std::vector<unsigned>(ips.size(), table), routes, index, add_source_hints);
}

std::vector<netns::RouteInfo> plan_main_routes(const std::vector<IpConfig>& ips, const std::vector<Route>& routes,
                                               int index) {
    std::vector<netns::RouteInfo> planned;
    for (const auto& route : routes) planned.push_back(to_route_info(route, ips, index));
    return planned;
}

bool is_default_route(const netns::RouteInfo& route) { return !route.dst; }

bool has_v6(const std::vector<IpConfig>& ips) {
    return std::any_of(ips.begin(), ips.end(), [](const IpConfig& ip) { return !ip.address.address.is_v4(); });
}

namespace {

bool in_main_table(const netns::RouteInfo& route) {
    return route.table == RT_TABLE_MAIN || route.table == 0;  // 0: the kernel reads main
}

// The IPAM's routes for the main table: every one without policyRouting; with it only the
// default routes (the rest live in the attachment's tables).
std::vector<netns::RouteInfo> main_route_candidates(const PodSetupInput& in) {
    auto routes = plan_main_routes(in.ips, in.routes, in.index);
    if (in.settings.policy_routing)
        routes.erase(std::remove_if(routes.begin(), routes.end(),
                                    [](const netns::RouteInfo& r) { return !is_default_route(r); }),
                     routes.end());
    return routes;
}

bool main_default_candidate(const netns::RouteInfo& route) { return is_default_route(route) && in_main_table(route); }

std::vector<SysctlWrite> sysctl_writes(const PodSetupInput& in) {
    return plan_sysctls(in.settings, in.ifname, has_v6(in.ips), skip_dad(in.settings, in.embedded_ipam));
}

// The tables of the attachment's addresses: one per address, the first free ones (as sbr does),
// or the fixed policyRouting.table, which must be free and can hold one gateway per family.
std::vector<unsigned> plan_tables(const PodSetupInput& in, const PodFacts& facts) {
    const auto& pr = *in.settings.policy_routing;
    const std::size_t count = std::max<std::size_t>(in.ips.size(), 1);
    if (!pr.table) return choose_free_tables(facts.route_tables, facts.rules, count);
    const unsigned table = *pr.table;
    if (facts.fixed_table_user)
        throw Error(ErrorCode::invalid_config,
                    "policyRouting.table " + std::to_string(table) + " is already used in this pod by " +
                        *facts.fixed_table_user,
                    "a table holds one default route per family, so two attachments cannot share one: leave "
                    "policyRouting.table unset (each address then gets a free table) or give each attachment its own");
    if (auto conflict = fixed_table_gateway_conflict(in.ips))
        throw Error(ErrorCode::invalid_config,
                    "policyRouting.table " + std::to_string(table) + " cannot route " + *conflict +
                        ": one table holds one default route per family",
                    "leave policyRouting.table unset: each address then gets its own table");
    return std::vector<unsigned>(count, table);
}

// The original value of every sysctl the attachment writes, as read before the first write.
std::vector<PodSetupRecord::Sysctl> recorded_sysctls(const std::vector<SysctlWrite>& writes, const PodFacts& facts,
                                                     const std::string& ifname) {
    std::vector<PodSetupRecord::Sysctl> out;
    for (const auto& w : writes) {
        const auto read = std::find_if(facts.sysctls.begin(), facts.sysctls.end(),
                                       [&](const PodFacts::SysctlValue& v) { return v.path == w.path; });
        if (read == facts.sysctls.end() || !read->value)
            throw Error(ErrorCode::invalid_config,
                        w.origin + ": " + w.path + " cannot be set on " + ifname + ": " +
                            (read == facts.sysctls.end() ? std::string("it was not read") : read->error),
                        "the kernel has no such setting for this interface");
        out.push_back(PodSetupRecord::Sysctl{w.path, *read->value});
    }
    return out;
}

}  // namespace

PodQuery pod_query(const PodSetupInput& in) {
    PodQuery query;
    const auto& pr = in.settings.policy_routing;
    if (pr) {
        if (pr->table)
            query.fixed_table = pr->table;
        else
            query.tables_in_use = true;
    }
    const auto main = main_route_candidates(in);
    query.main_defaults = std::any_of(main.begin(), main.end(), main_default_candidate);
    query.lock = pr.has_value() || query.main_defaults;
    for (const auto& w : sysctl_writes(in)) query.sysctls.push_back(w.path);
    return query;
}

PodSetupPlan plan_pod_setup(const PodSetupInput& in, const PodFacts& facts) {
    PodSetupPlan plan;
    plan.sysctls = sysctl_writes(in);
    const auto& pr = in.settings.policy_routing;
    plan.policy_routing = pr.has_value();
    std::vector<unsigned> tables;
    if (pr) {
        tables = plan_tables(in, facts);
        plan.record.table = tables.front();
        plan.record.rules = plan_rules(in.ips, tables, pr->priority);
    }
    plan.record.sysctls = recorded_sysctls(plan.sysctls, facts, in.ifname);

    // Announce the new addresses to neighbours (as the reference macvlan plugin does).
    const bool v6 = has_v6(in.ips);
    plan.notify_sysctls.push_back("net/ipv4/conf/" + in.ifname + "/arp_notify");
    if (v6) plan.notify_sysctls.push_back("net/ipv6/conf/" + in.ifname + "/ndisc_notify");

    for (const auto& ip : in.ips) plan.addresses.push_back(ip.address);
    plan.nodad = skip_dad(in.settings, in.embedded_ipam);
    plan.wait_for_dad = v6 && !plan.nodad;

    if (pr) {
        plan.table_routes = plan_table_routes(in.ips, tables, in.routes, in.index, pr->add_source_hints);
        // The main table keeps the kernel's subnet routes; an IPv6 one gets the source hint too
        // (the kernel's IPv4 subnet route carries it already).
        if (pr->add_source_hints)
            for (const auto& ip : in.ips) {
                if (ip.address.address.is_v4()) continue;
                netns::RouteInfo subnet;
                subnet.family = AF_INET6;
                subnet.dst = ip.address.masked();
                subnet.ifindex = in.index;
                subnet.priority = 256;  // the kernel's prefix route metric, which this replaces
                subnet.prefsrc = ip.address.address;
                plan.source_hints.push_back(subnet);
            }
    }
    // A default route the IPAM asked for explicitly goes to the main table only when the main
    // table has none of that family: the pod's default route is the cluster network's. A planned
    // one counts too, so a second of the same family is left out as it would be after the first.
    auto families = facts.main_default_families;
    for (auto& route : main_route_candidates(in)) {
        if (main_default_candidate(route)) {
            if (std::find(families.begin(), families.end(), route.family) != families.end()) {
                plan.main_defaults_left_out.push_back(std::move(route));
                continue;
            }
            families.push_back(route.family);
        }
        plan.main_routes.push_back(std::move(route));
    }
    return plan;
}

}  // namespace rdmanet::cni
