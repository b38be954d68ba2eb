// Reading links: RTM_GETLINK by index or name, and full dumps. libnl parses the message into an
// rtnl_link; alternative names (IFLA_PROP_LIST), which libnl 3.7 does not know, are read from
// the raw attributes.
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/macvlan.h>

#include <cstring>

#include "rtnl_impl.hpp"

namespace rdmanet::netns {
namespace {

using detail::NlMsgPtr;
using detail::NlObjPtr;

std::vector<std::string> altnames_of(nlmsghdr* hdr) {
    std::vector<std::string> names;
    nlattr* tb[IFLA_MAX + 1] = {};
    if (nlmsg_parse(hdr, sizeof(ifinfomsg), tb, IFLA_MAX, nullptr) < 0 || !tb[IFLA_PROP_LIST]) return names;
    nlattr* attr = nullptr;
    int remaining = 0;
    nla_for_each_nested(attr, tb[IFLA_PROP_LIST], remaining) {
        if (nla_type(attr) != IFLA_ALT_IFNAME) continue;
        const auto* text = static_cast<const char*>(nla_data(attr));
        names.emplace_back(text, strnlen(text, static_cast<std::size_t>(nla_len(attr))));
    }
    return names;
}

LinkInfo to_link_info(nl_msg* msg) {
    NlObjPtr<rtnl_link> link = detail::parse_as<rtnl_link>(msg, "RTM_NEWLINK");
    rtnl_link* l = link.get();
    LinkInfo info;
    info.index = rtnl_link_get_ifindex(l);
    if (const char* name = rtnl_link_get_name(l)) info.name = name;
    if (const char* kind = rtnl_link_get_type(l)) info.kind = kind;
    if (nl_addr* addr = rtnl_link_get_addr(l))
        info.mac = detail::format_hwaddr(nl_addr_get_binary_addr(addr), nl_addr_get_len(addr));
    info.mtu = rtnl_link_get_mtu(l);
    info.up = (rtnl_link_get_flags(l) & IFF_UP) != 0;
    if (const char* alias = rtnl_link_get_ifalias(l)) info.alias = alias;
    info.parent_index = rtnl_link_get_link(l);
    if (rtnl_link_is_macvlan(l)) info.macvlan_mode = static_cast<int>(rtnl_link_macvlan_get_mode(l));
    info.altnames = altnames_of(nlmsg_hdr(msg));
    return info;
}

bool is_new_link(nl_msg* msg) { return nlmsg_hdr(msg)->nlmsg_type == RTM_NEWLINK; }

// RTM_GETLINK for one link, by index or by name. Names that cannot be a primary name
// (IFNAMSIZ or longer) are looked up as alternative names, as iproute2 does.
std::optional<LinkInfo> get_link(detail::NlSocket& sock, int index, const std::string& name, const std::string& what) {
    ifinfomsg ifi{};
    ifi.ifi_family = AF_UNSPEC;
    ifi.ifi_index = index;
    NlMsgPtr msg = detail::new_message(RTM_GETLINK, 0, &ifi, sizeof ifi);
    if (!name.empty() &&
        nla_put_string(msg.get(), name.size() < IFNAMSIZ ? IFLA_IFNAME : IFLA_ALT_IFNAME, name.c_str()) < 0)
        throw KernelError(EMSGSIZE, what);
    std::optional<LinkInfo> found;
    detail::NlOutcome outcome = sock.transact(msg.get(), [&](nl_msg* reply) {
        if (is_new_link(reply)) found = to_link_info(reply);
    });
    if (outcome.error == ENODEV) return std::nullopt;
    detail::throw_if_error(outcome, what);
    return found;
}

}  // namespace

std::optional<LinkInfo> Rtnl::link_by_name(const std::string& name) {
    if (name.empty()) return std::nullopt;
    return get_link(impl_->sock, 0, name, "look up link " + name);
}

std::optional<LinkInfo> Rtnl::link_by_index(int index) {
    if (index <= 0) return std::nullopt;
    return get_link(impl_->sock, index, "", "look up link #" + std::to_string(index));
}

std::vector<LinkInfo> Rtnl::links() {
    std::vector<LinkInfo> result;
    impl_->dump(
        "dump links",
        [] {
            ifinfomsg ifi{};
            ifi.ifi_family = AF_UNSPEC;
            return detail::new_message(RTM_GETLINK, NLM_F_DUMP, &ifi, sizeof ifi);
        },
        [&] { result.clear(); },
        [&](nl_msg* reply) {
            if (is_new_link(reply)) result.push_back(to_link_info(reply));
        });
    return result;
}

}  // namespace rdmanet::netns
