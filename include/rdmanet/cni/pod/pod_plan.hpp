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

}  // namespace rdmanet::cni
