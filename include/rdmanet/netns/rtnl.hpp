#pragma once
// rtnetlink through libnl-3: links, addresses and routes of ONE network namespace, the one the
// calling thread was in when the Rtnl object was constructed (a netlink socket is bound to the
// netns it is created in). All failures throw KernelError with errno and the operation named.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmanet/base/ip.hpp"

namespace rdmanet::netns {

struct LinkInfo {
    int index = 0;
    std::string name;
    std::string kind;  // IFLA_INFO_KIND ("macvlan", "veth", ...); empty for physical
    std::string mac;   // lower-case colon hex; empty when the link has no address
    unsigned mtu = 0;
    bool up = false;                    // IFF_UP
    std::string alias;                  // IFLA_IFALIAS
    int parent_index = 0;               // IFLA_LINK (macvlan master, veth peer ...), 0 when none
    int macvlan_mode = 0;               // IFLA_MACVLAN_MODE for kind "macvlan", else 0
    std::vector<std::string> altnames;  // IFLA_PROP_LIST / IFLA_ALT_IFNAME
};

// Kernel values of IFLA_MACVLAN_MODE.
enum class MacvlanMode : int { private_ = 1, vepa = 2, bridge = 4, passthru = 8 };

struct MacvlanSpec {
    std::string name;      // name to create it under (a temporary one)
    int master_index = 0;  // ifindex of the master in THIS socket's netns
    MacvlanMode mode = MacvlanMode::bridge;
    unsigned mtu = 0;          // 0 = inherit the master's
    std::string mac;           // empty = kernel-chosen; passthru ignores it (master's MAC)
    int target_netns_fd = -1;  // created directly in this netns when >= 0 (IFLA_NET_NS_FD)
};

struct RouteInfo {
    std::optional<base::IpNetwork> dst;  // nullopt = default route
    std::optional<base::IpAddress> gateway;
    int ifindex = 0;
    unsigned priority = 0;                   // RTA_PRIORITY (metric)
    unsigned table = 254;                    // RT_TABLE_MAIN
    int scope = 0;                           // RT_SCOPE_UNIVERSE
    unsigned mtu = 0;                        // RTAX_MTU, 0 = unset
    unsigned advmss = 0;                     // RTAX_ADVMSS, 0 = unset
    int family = 0;                          // AF_INET / AF_INET6 (derived when 0)
    std::optional<base::IpAddress> prefsrc;  // RTA_PREFSRC: the source address hint
};

// A policy routing rule "from <src> lookup <table>" (FR_ACT_TO_TBL); other rules are listed with
// their table and priority only (src unset).
struct RuleInfo {
    int family = 0;                      // AF_INET / AF_INET6
    std::optional<base::IpNetwork> src;  // FRA_SRC with its prefix length
    unsigned table = 0;                  // FRA_TABLE (or the header's table)
    std::optional<unsigned> priority;    // FRA_PRIORITY; nullopt = let the kernel choose
};

// An address of a link with the flags DAD cares about.
struct AddressState {
    base::IpNetwork address;
    bool tentative = false;   // IFA_F_TENTATIVE: DAD still running, not usable as a source
    bool dad_failed = false;  // IFA_F_DADFAILED: a duplicate answered, never usable
};

class Rtnl {
public:
    Rtnl();
    ~Rtnl();
    Rtnl(const Rtnl&) = delete;
    Rtnl& operator=(const Rtnl&) = delete;

    // Lookups return nullopt when the link does not exist (ENODEV), throw on other errors.
    // The kernel resolves a name through alternative names too: link_by_name("x") can return
    // a link whose `name` differs and whose `altnames` hold "x" (such a name is not free).
    // Names of IFNAMSIZ characters or more can only be altnames and are looked up as such.
    std::optional<LinkInfo> link_by_name(const std::string& name);
    std::optional<LinkInfo> link_by_index(int index);
    // Full dump; dumps interrupted by NLM_F_DUMP_INTR are retried (up to 5 attempts).
    std::vector<LinkInfo> links();

    void create_macvlan(const MacvlanSpec& spec);
    // One RTM_SETLINK with IFLA_NET_NS_FD and, when new_name is non-empty, IFLA_IFNAME: the kernel
    // moves the link and renames it inside the target namespace in a single call.
    // Not atomic when new_name is taken in the target: if the link's current name is free there,
    // the kernel moves it, then fails the rename with EEXIST, leaving the link in the target
    // under its old name. If both names are taken (or an altname of the link is), nothing moves.
    void move_link(int index, int netns_fd, const std::string& new_name = "");
    void rename_link(int index, const std::string& name);
    void set_up(int index, bool up);
    void set_mtu(int index, unsigned mtu);
    void set_mac(int index, const std::string& mac);
    void set_alias(int index, const std::string& alias);  // empty clears it
    void delete_link(int index);
    // RTM_DELLINKPROP with IFLA_PROP_LIST/IFLA_ALT_IFNAME; ENOENT/ENODATA are not errors, nor is
    // the kernel's EINVAL for a name that is not an altname of this link (its primary name, or
    // a name of another link): afterwards the link does not carry `altname` either way.
    void delete_altname(int index, const std::string& altname);

    // nodad sets IFA_F_NODAD (IPv6) so the address is usable at once. IPv4 addresses shorter
    // than /31 get their broadcast address. EEXIST when the link already has the address.
    void add_address(int index, const base::IpNetwork& address, bool nodad = true);
    // Every address of the link, both families, IPv6 link-local included, in kernel order.
    std::vector<base::IpNetwork> addresses(int index);
    // RTPROT_BOOT unicast route; host bits of `dst` are masked off; EEXIST when it exists.
    void add_route(const RouteInfo& route);
    // Unicast routes of the main table, both families, whose nexthop (the first one on the
    // link, for multipath) leaves through `ifindex`; ifindex <= 0 lists them for all links.
    // The kernel stores IPv6 routes added with priority 0 under metric 1024.
    std::vector<RouteInfo> routes(int ifindex);
    // The same for routing table `table` (routes(ifindex) is routes_in_table(ifindex, 254)).
    std::vector<RouteInfo> routes_in_table(int ifindex, unsigned table);
    // Every table number any route of this netns (any type, both families) is in.
    std::vector<unsigned> route_tables();
    // RTM_DELROUTE of dst/table/ifindex (gateway and priority when set); ENOENT/ESRCH when absent.
    void delete_route(const RouteInfo& route);
    // RTM_NEWROUTE with NLM_F_REPLACE: the route with the same key (dst, table, metric) is
    // replaced, or created.
    void replace_route(const RouteInfo& route);

    // Policy routing rules, both families, in kernel order. EEXIST on add when the kernel has an
    // identical rule; ENOENT on delete when it has none.
    void add_rule(const RuleInfo& rule);
    void delete_rule(const RuleInfo& rule);
    std::vector<RuleInfo> rules();
    // Every address of the link with its DAD flags.
    std::vector<AddressState> address_states(int index);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Parses "aa:bb:cc:dd:ee:ff" (any case). Used to validate MACs from configs before netlink sees them.
bool is_valid_mac(const std::string& mac);

}  // namespace rdmanet::netns
