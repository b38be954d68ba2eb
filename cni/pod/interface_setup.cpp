#include "rdmanet/cni/pod/interface_setup.hpp"

#include <algorithm>
#include <map>
#include <linux/rtnetlink.h>
#include <thread>

#include <spdlog/spdlog.h>

#include "rdmanet/base/failpoint.hpp"
#include "rdmanet/cni/pod/netns_lock.hpp"
#include "rdmanet/cni/pod/pod_facts.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::cni {

namespace {

// How long an ADD waits for another ADD into the same pod to finish its routing step.
constexpr std::chrono::milliseconds kLockBound{30000};

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

// Applies `plan` in one pass, in the order DEL's undo and the failpoint steps assume: the record
// first, then sysctls, addresses and link up (DAD finished), the routes, and the rules last.
void apply_pod_setup(const PodInterfaceRequest& rq, const PodSetupPlan& plan) {
    rq.record(plan.record);
    netns::in_netns(rq.pod_ns, [&] {
        for (const auto& w : plan.sysctls) {
            try {
                netns::write_sysctl(w.path, w.value);
            } catch (const netns::KernelError& e) {
                throw Error(ErrorCode::invalid_config,
                            w.origin + ": writing " + w.value + " to " + w.path + " failed: " + e.what(),
                            "the kernel refused the value");
            }
            spdlog::info("sysctl {}={}", w.path, w.value);
        }
        for (const auto& path : plan.notify_sysctls) write_sysctl_quietly(path, "1");
    });
    base::failpoint(base::Failpoint::add_after_pod_sysctls);

    for (const auto& address : plan.addresses) {
        rq.pod.add_address(rq.index, address, plan.nodad);
        spdlog::info("address {} on {}", address.str(), rq.ifname);
    }
    rq.pod.set_up(rq.index, true);
    if (plan.wait_for_dad) wait_for_dad(rq.pod, rq.index, rq.ifname, rq.dad_bound);
    base::failpoint(base::Failpoint::add_after_pod_addresses);

    for (const auto& route : plan.table_routes) add_route_once(rq.pod, route, rq.ifname);
    for (const auto& route : plan.source_hints) rq.pod.replace_route(route);
    for (const auto& route : plan.main_routes) add_route_once(rq.pod, route, rq.ifname);
    for (const auto& route : plan.main_defaults_left_out)
        spdlog::info("default route via {} on {} not added: the main table has one",
                     route.gateway ? route.gateway->str() : "(link)", rq.ifname);
    if (!plan.policy_routing) return;
    base::failpoint(base::Failpoint::add_after_pod_routes);
    for (const auto& rule : plan.record.rules) {
        try {
            rq.pod.add_rule(rule);
        } catch (const netns::KernelError& e) {
            if (e.errno_value() != EEXIST) throw;
        }
        spdlog::info("rule from {} lookup {}", rule.src->str(), rule.table);
    }
}

}  // namespace

PodSetupRecord configure_pod_interface(const PodInterfaceRequest& rq) {
    const PodSetupInput in{rq.ifname,      rq.index,    own_ips(rq.ipam, rq.iface),
                           rq.ipam.routes, rq.settings, rq.embedded_ipam};
    const PodQuery query = pod_query(in);
    // Concurrent ADDs into one pod (Multus may run them in parallel): from the kernel's answer
    // until the plan is applied, another ADD must not see a chosen table as free, nor the main
    // table without the default route this one adds.
    std::optional<NetnsLock> lock;
    if (query.lock) lock.emplace(rq.pod_ns, kLockBound);
    const PodSetupPlan plan = plan_pod_setup(in, read_pod_facts(rq.pod_ns, rq.pod, query));
    apply_pod_setup(rq, plan);
    return plan.record;
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
