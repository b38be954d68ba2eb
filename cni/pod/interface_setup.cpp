#include "rdmanet/cni/pod/interface_setup.hpp"

#include <algorithm>
#include <map>
#include <linux/rtnetlink.h>
#include <thread>

#include <spdlog/spdlog.h>

#include "rdmanet/base/failpoint.hpp"
#include "rdmanet/cni/pod/netns_lock.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::cni {

namespace {

// How long an ADD waits for another ADD into the same pod to finish its routing step.
constexpr std::chrono::milliseconds kLockBound{30000};

bool has_v6(const std::vector<IpConfig>& ips) {
    return std::any_of(ips.begin(), ips.end(), [](const IpConfig& ip) { return !ip.address.address.is_v4(); });
}

void write_sysctl_quietly(const std::string& key, const std::string& value) {
    try {
        netns::write_sysctl(key, value);
    } catch (const std::exception& e) {
        spdlog::debug("sysctl {}={} not applied: {}", key, value, e.what());
    }
}

bool gone(const netns::KernelError& e) {
    return e.errno_value() == ENOENT || e.errno_value() == ESRCH || e.errno_value() == ENODEV;
}

// Waits until no IPv6 address of the link is tentative; a duplicate is an error at once.
void wait_for_dad(netns::Rtnl& pod, int index, const std::string& ifname, std::chrono::milliseconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    for (;;) {
        bool tentative = false;
        for (const auto& a : pod.address_states(index)) {
            if (a.dad_failed)
                throw Error(ErrorCode::kernel_failure,
                            "address " + a.address.str() + " on " + ifname + " is a duplicate (DAD failed)",
                            "another host on the link uses it: fix the IPAM range or static address");
            tentative = tentative || a.tentative;
        }
        if (!tentative) return;
        if (std::chrono::steady_clock::now() >= deadline)
            throw Error(ErrorCode::timeout,
                        "IPv6 duplicate address detection on " + ifname + " did not finish in " +
                            std::to_string(bound.count()) + " ms",
                        "the link may have no carrier; \"ipv6\": {\"dad\": false} skips DAD");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

bool main_has_default(netns::Rtnl& pod, int family) {
    const auto routes = pod.routes(0);
    return std::any_of(routes.begin(), routes.end(),
                       [&](const netns::RouteInfo& r) { return !r.dst && r.family == family; });
}

std::string route_text(const netns::RouteInfo& route) {
    return (route.dst ? route.dst->str() : std::string("default")) +
           (route.gateway ? " via " + route.gateway->str() : std::string());
}

// A route through a gateway no address of the interface can reach: the kernel refuses it with
// EINVAL ("Nexthop has invalid gateway", IPv4), EHOSTUNREACH (IPv6) or ENETUNREACH.
bool unreachable_gateway(const netns::RouteInfo& route, const netns::KernelError& e) {
    return route.gateway &&
           (e.errno_value() == EINVAL || e.errno_value() == EHOSTUNREACH || e.errno_value() == ENETUNREACH);
}

void add_route_once(netns::Rtnl& pod, const netns::RouteInfo& route, const std::string& ifname) {
    try {
        pod.add_route(route);
    } catch (const netns::KernelError& e) {
        if (unreachable_gateway(route, e))
            throw Error(ErrorCode::invalid_config,
                        "route " + route_text(route) + " on " + ifname + ": the gateway " + route.gateway->str() +
                            " is not on the link (no subnet of " + ifname +
                            "'s addresses holds it; the kernel says: " + e.what() + ")",
                        "fix the IPAM's routes or gateway: a gateway must be in a subnet of the interface");
        if (e.errno_value() != EEXIST) throw;
    }
    spdlog::info("route {} via {} on {} table {}", route.dst ? route.dst->str() : "default",
                 route.gateway ? route.gateway->str() : "(link)", ifname, route.table);
}

// A default route the IPAM asked for explicitly goes to the main table only when the main table
// has none of that family: the pod's default route is the cluster network's.
void add_main_route(netns::Rtnl& pod, const netns::RouteInfo& route, const std::string& ifname) {
    const bool in_main = route.table == RT_TABLE_MAIN || route.table == 0;  // 0: the kernel reads main
    if (is_default_route(route) && in_main && main_has_default(pod, route.family)) {
        spdlog::info("default route via {} on {} not added: the main table has one",
                     route.gateway ? route.gateway->str() : "(link)", ifname);
        return;
    }
    add_route_once(pod, route, ifname);
}

void apply_policy_routing(const PodInterfaceRequest& rq, const std::vector<IpConfig>& ips,
                          const PodSetupRecord& record) {
    const PolicyRouting& pr = *rq.settings.policy_routing;
    for (const auto& route :
         plan_table_routes(ips, tables_of(ips, record), rq.ipam.routes, rq.index, pr.add_source_hints))
        add_route_once(rq.pod, route, rq.ifname);
    // The main table keeps the kernel's subnet routes; an IPv6 one gets the source hint too
    // (the kernel's IPv4 subnet route carries it already).
    if (pr.add_source_hints)
        for (const auto& ip : ips) {
            if (ip.address.address.is_v4()) continue;
            netns::RouteInfo subnet;
            subnet.family = AF_INET6;
            subnet.dst = ip.address.masked();
            subnet.ifindex = rq.index;
            subnet.priority = 256;  // the kernel's prefix route metric, which this replaces
            subnet.prefsrc = ip.address.address;
            rq.pod.replace_route(subnet);
        }
    for (const auto& route : plan_main_routes(ips, rq.ipam.routes, rq.index))
        if (is_default_route(route)) add_main_route(rq.pod, route, rq.ifname);
    base::failpoint(base::Failpoint::add_after_pod_routes);
    for (const auto& rule : record.rules) {
        try {
            rq.pod.add_rule(rule);
        } catch (const netns::KernelError& e) {
            if (e.errno_value() != EEXIST) throw;
        }
        spdlog::info("rule from {} lookup {}", rule.src->str(), rule.table);
    }
}

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

// The tables of the attachment's addresses: one per address, the first free ones (as sbr does),
// or the fixed policyRouting.table, which must be free and can hold one gateway per family.
std::vector<unsigned> choose_tables(const PodInterfaceRequest& rq, const std::vector<IpConfig>& ips) {
    const auto& pr = *rq.settings.policy_routing;
    if (!pr.table)
        return choose_free_tables(rq.pod.route_tables(), rq.pod.rules(), std::max<std::size_t>(ips.size(), 1));
    const unsigned table = *pr.table;
    if (auto user = table_user(rq.pod, table))
        throw Error(ErrorCode::invalid_config,
                    "policyRouting.table " + std::to_string(table) + " is already used in this pod by " + *user,
                    "a table holds one default route per family, so two attachments cannot share one: leave "
                    "policyRouting.table unset (each address then gets a free table) or give each attachment its own");
    if (auto conflict = fixed_table_gateway_conflict(ips))
        throw Error(ErrorCode::invalid_config,
                    "policyRouting.table " + std::to_string(table) + " cannot route " + *conflict +
                        ": one table holds one default route per family",
                    "leave policyRouting.table unset: each address then gets its own table");
    return std::vector<unsigned>(std::max<std::size_t>(ips.size(), 1), table);
}

}  // namespace

PodSetupRecord configure_pod_interface(const PodInterfaceRequest& rq) {
    const auto ips = own_ips(rq.ipam, rq.iface);
    const bool v6 = has_v6(ips);
    const bool nodad = skip_dad(rq.settings, rq.embedded_ipam);
    const auto writes = plan_sysctls(rq.settings, rq.ifname, v6, nodad);
    PodSetupRecord record;

    // The rest runs under the pod's lock when a table has to be chosen: from the choice until
    // its rules exist, another ADD must not see the table as free. Everything is chosen first and
    // recorded in one state write.
    // A fixed table is checked for other users under the same lock.
    std::optional<NetnsLock> lock;
    if (rq.settings.policy_routing) lock.emplace(rq.pod_ns, kLockBound);

    if (rq.settings.policy_routing) {
        const auto tables = choose_tables(rq, ips);
        record.table = tables.front();
        record.rules = plan_rules(ips, tables, rq.settings.policy_routing->priority);
    }
    netns::in_netns(rq.pod_ns, [&] {
        for (const auto& w : writes) {
            try {
                record.sysctls.push_back(PodSetupRecord::Sysctl{w.path, netns::read_sysctl(w.path)});
            } catch (const netns::KernelError& e) {
                throw Error(ErrorCode::invalid_config,
                            w.origin + ": " + w.path + " cannot be set on " + rq.ifname + ": " + e.what(),
                            "the kernel has no such setting for this interface");
            }
        }
    });
    rq.record(record);
    netns::in_netns(rq.pod_ns, [&] {
        for (const auto& w : writes) {
            try {
                netns::write_sysctl(w.path, w.value);
            } catch (const netns::KernelError& e) {
                throw Error(ErrorCode::invalid_config,
                            w.origin + ": writing " + w.value + " to " + w.path + " failed: " + e.what(),
                            "the kernel refused the value");
            }
            spdlog::info("sysctl {}={}", w.path, w.value);
        }
        // Announce the new addresses to neighbours (as the reference macvlan plugin does).
        write_sysctl_quietly("net/ipv4/conf/" + rq.ifname + "/arp_notify", "1");
        if (v6) write_sysctl_quietly("net/ipv6/conf/" + rq.ifname + "/ndisc_notify", "1");
    });
    base::failpoint(base::Failpoint::add_after_pod_sysctls);

    for (const auto& ip : ips) {
        rq.pod.add_address(rq.index, ip.address, nodad);
        spdlog::info("address {} on {}", ip.address.str(), rq.ifname);
    }
    rq.pod.set_up(rq.index, true);
    if (v6 && !nodad) wait_for_dad(rq.pod, rq.index, rq.ifname, rq.dad_bound);
    base::failpoint(base::Failpoint::add_after_pod_addresses);

    if (rq.settings.policy_routing) {
        apply_policy_routing(rq, ips, record);
    } else {
        for (const auto& route : plan_main_routes(ips, rq.ipam.routes, rq.index))
            add_main_route(rq.pod, route, rq.ifname);
    }
    return record;
}

void undo_pod_setup(const netns::NetNamespace& pod_ns, netns::Rtnl& pod, const std::string& ifname,
                    const PodSetupRecord& record) {
    std::vector<std::string> failures;
    for (const auto& rule : record.rules) {
        try {
            pod.delete_rule(rule);
        } catch (const netns::KernelError& e) {
            if (!gone(e)) failures.push_back(e.what());
        }
    }
    auto link = pod.link_by_name(ifname);
    if (link)
        for (const unsigned table : record.tables())
            for (const auto& route : pod.routes_in_table(link->index, table)) {
                try {
                    pod.delete_route(route);
                } catch (const netns::KernelError& e) {
                    if (!gone(e)) failures.push_back(e.what());
                }
            }
    if (link) {
        netns::in_netns(pod_ns, [&] {
            for (auto it = record.sysctls.rbegin(); it != record.sysctls.rend(); ++it) {
                try {
                    netns::write_sysctl(it->path, it->original);
                } catch (const netns::KernelError& e) {
                    if (!gone(e)) failures.push_back(e.what());
                }
            }
        });
    }
    if (!failures.empty()) {
        std::string msg = "pod routing teardown on " + ifname + ": ";
        for (std::size_t i = 0; i < failures.size(); ++i) msg += (i ? "; " : "") + failures[i];
        throw Error(ErrorCode::try_again, msg);
    }
}

void check_pod_interface(netns::Rtnl& pod, int index, const std::string& ifname, const Result& expected, int iface,
                         const PodSettings& settings, const PodSetupRecord& record) {
    const auto ips = own_ips(expected, iface);
    const auto present = pod.addresses(index);
    for (const auto& ip : ips)
        if (std::find(present.begin(), present.end(), ip.address) == present.end())
            throw Error(ErrorCode::invalid_config, "address " + ip.address.str() + " missing on " + ifname);

    const bool in_table = settings.policy_routing && record.table;
    const auto planned = in_table ? plan_table_routes(ips, tables_of(ips, record), expected.routes, index, false)
                                  : plan_main_routes(ips, expected.routes, index);
    // Each route is looked for in the table ADD put it in (a result's route may name its own).
    std::map<unsigned, std::vector<netns::RouteInfo>> tables;
    const auto routes_in = [&](unsigned table) -> const std::vector<netns::RouteInfo>& {
        auto it = tables.find(table);
        if (it == tables.end()) it = tables.emplace(table, pod.routes_in_table(index, table)).first;
        return it->second;
    };
    for (const auto& want : planned) {
        const unsigned table = want.table == 0 ? RT_TABLE_MAIN : want.table;
        // A default route the main table already had from the cluster network was not ours to add.
        if (!in_table && table == RT_TABLE_MAIN && is_default_route(want)) continue;
        const auto& routes = routes_in(table);
        const bool found = std::any_of(routes.begin(), routes.end(), [&](const netns::RouteInfo& r) {
            return r.dst == want.dst && r.family == want.family && (!want.gateway || r.gateway == want.gateway);
        });
        if (!found)
            throw Error(ErrorCode::invalid_config,
                        "route " + route_text(want) + " missing on " + ifname +
                            (table != RT_TABLE_MAIN ? " in table " + std::to_string(table) : ""));
    }
    if (!in_table) return;
    const auto rules = pod.rules();
    for (const auto& want : record.rules) {
        const bool found = std::any_of(rules.begin(), rules.end(), [&](const netns::RuleInfo& r) {
            return r.src == want.src && r.table == want.table && (!want.priority || r.priority == want.priority);
        });
        if (!found)
            throw Error(ErrorCode::invalid_config, "rule from " + want.src->str() + " lookup " +
                                                       std::to_string(want.table) + " missing for " + ifname);
    }
}

namespace {

// Multi-valued sysctls read back tab-separated; a config may write them with spaces.
std::string normalized(const std::string& value) {
    std::string out;
    bool space = false;
    for (const char c : value) {
        if (c == ' ' || c == '\t' || c == '\n') {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += c;
    }
    return out;
}

std::string dotted(std::string path) {
    std::replace(path.begin(), path.end(), '/', '.');
    return path;
}

}  // namespace

void check_pod_sysctls(const netns::NetNamespace& pod_ns, const PodSettings& settings, const std::string& ifname,
                       const std::vector<IpConfig>& ips, bool embedded_ipam) {
    const auto writes = plan_sysctls(settings, ifname, has_v6(ips), skip_dad(settings, embedded_ipam));
    netns::in_netns(pod_ns, [&] {
        for (const auto& w : writes) {
            std::string actual;
            try {
                actual = netns::read_sysctl(w.path);
            } catch (const netns::KernelError& e) {
                throw Error(ErrorCode::invalid_config,
                            w.origin + ": " + dotted(w.path) + " cannot be read: " + e.what());
            }
            if (normalized(actual) != normalized(w.value))
                throw Error(ErrorCode::invalid_config,
                            w.origin + ": " + dotted(w.path) + " is " + normalized(actual) + ", expected " + w.value,
                            "something in the pod changed it after ADD");
        }
    });
}

}  // namespace rdmanet::cni
