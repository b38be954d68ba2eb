#pragma once
// Pure decisions of the pod-side setup: which sysctls an attachment writes, which routing table
// it takes, which rules and table routes it installs, and the record DEL undoes them from.
// No I/O: cni/pod/interface_setup.cpp applies what these return.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/config/pod_settings.hpp"
#include "rdmanet/cni/protocol/result.hpp"
#include "rdmanet/netns/rtnl.hpp"

namespace rdmanet::cni {

struct NodePolicy;

// One sysctl the attachment writes: its /proc/sys-relative path and value, and the key that asked
// for it (for errors: "sysctl.<key>", or the default's name).
struct SysctlWrite {
    std::string path;  // "net/ipv4/conf/net1/arp_ignore"
    std::string value;
    std::string origin;  // "sysctl.net.ipv4.conf.IFNAME.arp_ignore" | "policyRouting default" | "ipv6"
};

// What ADD changed beyond the interface itself, recorded in the attachment state before it is
// changed, so that DEL (and a DEL after a crash half-way) undoes exactly that.
struct PodSetupRecord {
    // policyRouting's first table (a state written before one table per address only has this).
    std::optional<unsigned> table;
    std::vector<netns::RuleInfo> rules;  // "from <addr> lookup <table>", one per address
    struct Sysctl {
        std::string path;
        std::string original;  // the value before ADD wrote it
    };
    std::vector<Sysctl> sysctls;  // in write order; restored in reverse

    bool empty() const { return !table && rules.empty() && sysctls.empty(); }
    // Every table the attachment uses: `table` and the rules' tables, each once.
    std::vector<unsigned> tables() const;
    nlohmann::json to_json() const;
    // Throws nothing: malformed parts are skipped (DEL must work from whatever is readable).
    static PodSetupRecord from_json(const nlohmann::json& j);
};

// The addresses of `ipam` that belong to interface `iface` (an IP with no interface index counts).
std::vector<IpConfig> own_ips(const Result& ipam, int iface);

// Checks the "sysctl" keys against the pod-side name and the node policy before anything
// changes: a key written with another interface's name, or one the policy does not allow, is
// Error(invalid_config) naming "sysctl.<key>".
void check_pod_settings(const PodSettings& settings, const std::string& ifname, const NodePolicy& policy);

// Every sysctl the attachment writes, in order: policyRouting's defaults (arp_ignore=1,
// arp_announce=2, rp_filter=2) when on, IPv6 enabled on the interface when it gets a v6 address
// (and accept_dad=0 when DAD is skipped), then the "sysctl" entries, which win over a default of
// the same path (the default is then not written at all).
std::vector<SysctlWrite> plan_sysctls(const PodSettings& settings, const std::string& ifname, bool has_v6,
                                      bool skip_dad);

// Whether any of `ips` is an IPv6 address (IPv6 is then turned on for the interface).
bool has_v6(const std::vector<IpConfig>& ips);

// Whether DAD is skipped for this attachment's IPv6 addresses: ipv6.dad when given, else skipped
// for the embedded IPAM only (its addresses are unique by construction).
bool skip_dad(const PodSettings& settings, bool embedded_ipam);

// The first table from kFirstAutoTable up that no rule and no route of the pod uses, skipping
// the reserved 253-255; throws Error(try_again) if every table is in use.
unsigned choose_free_table(const std::vector<unsigned>& route_tables, const std::vector<netns::RuleInfo>& rules);
// `count` distinct such tables, lowest first.
std::vector<unsigned> choose_free_tables(const std::vector<unsigned>& route_tables,
                                         const std::vector<netns::RuleInfo>& rules, std::size_t count);

// One rule per address: "from <addr>/32|128 lookup <tables[i]>" with the configured priority
// (as sbr: each address has its own table). The second form puts every address in one table.
std::vector<netns::RuleInfo> plan_rules(const std::vector<IpConfig>& ips, const std::vector<unsigned>& tables,
                                        std::optional<unsigned> priority);
std::vector<netns::RuleInfo> plan_rules(const std::vector<IpConfig>& ips, unsigned table,
                                        std::optional<unsigned> priority);

// The table of each address as ADD recorded it (its rule's table; a record from before one
// table per address: its one table).
std::vector<unsigned> tables_of(const std::vector<IpConfig>& ips, const PodSetupRecord& record);

// A fixed policyRouting.table holds one default route per family: two addresses of one family
// with different gateways cannot share it. Names them, or nullopt.
std::optional<std::string> fixed_table_gateway_conflict(const std::vector<IpConfig>& ips);

// Routes on link `index`, address i's in table tables[i]: its subnet route (scope link, with the
// address as source hint) and a default route via its own gateway; then `routes`: one through a
// gateway in the table of each address whose subnet holds the gateway (none: the first address of
// its family), one without a gateway in every table of its family via that address's gateway.
// With source hints, the routes through a gateway carry their table's address as `prefsrc`.
std::vector<netns::RouteInfo> plan_table_routes(const std::vector<IpConfig>& ips, const std::vector<unsigned>& tables,
                                                const std::vector<Route>& routes, int index, bool add_source_hints);
// Every address in one `table`.
std::vector<netns::RouteInfo> plan_table_routes(const std::vector<IpConfig>& ips, const std::vector<Route>& routes,
                                                unsigned table, int index, bool add_source_hints);

// The IPAM's routes as main-table routes on link `index` (without policyRouting).
std::vector<netns::RouteInfo> plan_main_routes(const std::vector<IpConfig>& ips, const std::vector<Route>& routes,
                                               int index);

bool is_default_route(const netns::RouteInfo& route);

// ---- One attachment's whole pod-side setup, planned before anything changes ---------------
// configure_pod_interface (interface_setup.hpp) asks pod_query what it must know, reads that from
// the pod's kernel (read_pod_facts, pod_facts.hpp), has plan_pod_setup decide everything from
// the request and those facts, and applies the plan in one pass.

// What the request says about the pod side of one attachment.
struct PodSetupInput {
    std::string ifname;
    int index = 0;              // the link in the pod
    std::vector<IpConfig> ips;  // the attachment's own addresses (own_ips)
    std::vector<Route> routes;  // the IPAM's routes
    PodSettings settings;
    bool embedded_ipam = false;  // the addresses come from rdmanet-ipam (DAD may be skipped)
};

// What the plan needs from the pod's kernel, and whether it must be read under the pod's lock:
// the lock is needed when another ADD into the same pod can change the answer before this plan is
// applied (a free table; whether the main table has a default route).
struct PodQuery {
    bool lock = false;
    bool tables_in_use = false;           // the pod's route tables and rules: free tables to choose
    std::optional<unsigned> fixed_table;  // policyRouting.table: who in the pod uses it already
    std::vector<std::string> sysctls;     // paths whose values are recorded before they are written
    bool main_defaults = false;           // the families of the main table's default routes
};

// The pod's kernel as read for a PodQuery.
struct PodFacts {
    std::vector<unsigned> route_tables;
    std::vector<netns::RuleInfo> rules;
    std::optional<std::string> fixed_table_user;  // what uses the fixed table; nullopt: nothing
    struct SysctlValue {
        std::string path;
        std::optional<std::string> value;  // nullopt: unreadable, `error` says why
        std::string error;
    };
    std::vector<SysctlValue> sysctls;
    std::vector<int> main_default_families;  // AF_INET / AF_INET6
};

// Everything one ADD does in the pod, in the order it is applied. The record is saved before the
// first change, so that DEL (and a DEL after a crash half-way) undoes exactly what was planned.
struct PodSetupPlan {
    PodSetupRecord record;
    std::vector<SysctlWrite> sysctls;
    std::vector<std::string> notify_sysctls;  // set to 1, best effort (arp_notify, ndisc_notify)
    std::vector<base::IpNetwork> addresses;
    bool nodad = true;                                     // IPv6 addresses with IFA_F_NODAD
    bool wait_for_dad = false;                             // IPv6 addresses that run DAD: wait until none is tentative
    std::vector<netns::RouteInfo> table_routes;            // policyRouting: each address's table
    std::vector<netns::RouteInfo> source_hints;            // the main table's IPv6 subnet routes, replaced
    std::vector<netns::RouteInfo> main_routes;             // the main table (a default only where none was)
    std::vector<netns::RouteInfo> main_defaults_left_out;  // the main table had one of the family
    bool policy_routing = false;                           // then the record's rules, after every route
};

// What plan_pod_setup needs to know from the pod, and whether under the lock.
PodQuery pod_query(const PodSetupInput& in);

// The whole setup from the request and the kernel's answer to pod_query(in). Errors, before
// anything changed: Error(invalid_config) for a fixed policyRouting.table used in the pod already
// or given two gateways of one family, and for a sysctl the interface does not have;
// Error(try_again) when every routing table is in use.
PodSetupPlan plan_pod_setup(const PodSetupInput& in, const PodFacts& facts);

}  // namespace rdmanet::cni
