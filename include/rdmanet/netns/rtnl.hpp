#pragma once
// rtnetlink through libnl-3: links, addresses and routes of ONE network namespace, the one the
// calling thread was in when the Rtnl object was constructed (a netlink socket is bound to the
// netns it is created in). All failures throw KernelError with errno and the operation named.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmanet/netns/ip.hpp"

namespace rdmanet::netns {

struct LinkInfo {
    int index = 0;
    std::string name;
    std::string kind;           // IFLA_INFO_KIND ("macvlan", "veth", ...); empty for physical
    std::string mac;            // lower-case colon hex; empty when the link has no address
    unsigned mtu = 0;
    bool up = false;            // IFF_UP
    std::string alias;          // IFLA_IFALIAS
    int parent_index = 0;       // IFLA_LINK (macvlan master, veth peer ...), 0 when none
    int macvlan_mode = 0;       // IFLA_MACVLAN_MODE for kind "macvlan", else 0
    std::vector<std::string> altnames;  // IFLA_PROP_LIST / IFLA_ALT_IFNAME
};

// Kernel values of IFLA_MACVLAN_MODE.
enum class MacvlanMode : int { private_ = 1, vepa = 2, bridge = 4, passthru = 8 };

struct MacvlanSpec {
    std::string name;           // name to create it under (a temporary one)
    int master_index = 0;       // ifindex of the master in THIS socket's netns
    MacvlanMode mode = MacvlanMode::bridge;
    unsigned mtu = 0;           // 0 = inherit the master's
    std::string mac;            // empty = kernel-chosen
    int target_netns_fd = -1;   // created directly in this netns when >= 0 (IFLA_NET_NS_FD)
};

struct RouteInfo {
    std::optional<IpNetwork> dst;       // nullopt = default route
    std::optional<IpAddress> gateway;
    int ifindex = 0;
    unsigned priority = 0;              // RTA_PRIORITY (metric)
    unsigned table = 254;               // RT_TABLE_MAIN
    int scope = 0;                      // RT_SCOPE_UNIVERSE
    unsigned mtu = 0;                   // RTAX_MTU, 0 = unset
    unsigned advmss = 0;                // RTAX_ADVMSS, 0 = unset
    int family = 0;                     // AF_INET / AF_INET6 (derived when 0)
};

class Rtnl {
public:
    Rtnl();
    ~Rtnl();
    Rtnl(const Rtnl&) = delete;
    Rtnl& operator=(const Rtnl&) = delete;

    // Lookups return nullopt when the link does not exist (ENODEV), throw on other errors.
    std::optional<LinkInfo> link_by_name(const std::string& name);
    std::optional<LinkInfo> link_by_index(int index);
    // Full dump; dumps interrupted by NLM_F_DUMP_INTR are retried (up to 5 attempts).
    std::vector<LinkInfo> links();

    void create_macvlan(const MacvlanSpec& spec);
    // One RTM_SETLINK with IFLA_NET_NS_FD and, when new_name is non-empty, IFLA_IFNAME: the kernel
    // moves the link and renames it inside the target namespace in a single call.
    void move_link(int index, int netns_fd, const std::string& new_name = "");
    void rename_link(int index, const std::string& name);
    void set_up(int index, bool up);
    void set_mtu(int index, unsigned mtu);
    void set_mac(int index, const std::string& mac);
    void set_alias(int index, const std::string& alias);   // empty clears it
    void delete_link(int index);
    // RTM_DELLINKPROP with IFLA_PROP_LIST/IFLA_ALT_IFNAME; ENOENT/ENODATA are not errors.
    void delete_altname(int index, const std::string& altname);

    // nodad sets IFA_F_NODAD (IPv6) so the address is usable at once.
    void add_address(int index, const IpNetwork& address, bool nodad = true);
    std::vector<IpNetwork> addresses(int index);
    void add_route(const RouteInfo& route);
    std::vector<RouteInfo> routes(int ifindex);   // main table, both families

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Parses "aa:bb:cc:dd:ee:ff" (any case). Used to validate MACs from configs before netlink sees them.
bool is_valid_mac(const std::string& mac);

}  // namespace rdmanet::netns
