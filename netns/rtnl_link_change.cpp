// Changing links: creation (macvlan), moves, renames, flags, MTU, MAC, alias, deletion and
// alternative names. Changes to an existing link are single RTM_SETLINK messages built here
// from the uapi, so that each kernel call is exactly the one the caller asked for (libnl's
// rtnl_link_change() may send RTM_NEWLINK first and retry as RTM_SETLINK).
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/macvlan.h>

#include <algorithm>

#include "rtnl_impl.hpp"

namespace rdmanet::netns {
namespace {

using detail::NlMsgPtr;
using detail::NlObjPtr;

std::string link_ref(int index) { return "link #" + std::to_string(index); }

NlMsgPtr link_message(int type, int index, unsigned change = 0, unsigned flags = 0) {
    ifinfomsg ifi{};
    ifi.ifi_family = AF_UNSPEC;
    ifi.ifi_index = index;
    ifi.ifi_change = change;
    ifi.ifi_flags = flags;
    return detail::new_message(type, 0, &ifi, sizeof ifi);
}

void check_put(int nl_result, const std::string& what) {
    if (nl_result < 0) throw KernelError(EMSGSIZE, what + ": message too large");
}

const char* mode_name(MacvlanMode mode) {
    switch (mode) {
    case MacvlanMode::private_: return "private";
    case MacvlanMode::vepa: return "vepa";
    case MacvlanMode::bridge: return "bridge";
    case MacvlanMode::passthru: return "passthru";
    }
    return "?";
}

}  // namespace

void Rtnl::create_macvlan(const MacvlanSpec& spec) {
    const std::string what =
        "create macvlan " + spec.name + " (" + mode_name(spec.mode) + ") on master " + link_ref(spec.master_index);
    NlObjPtr<rtnl_link> link(rtnl_link_macvlan_alloc());
    if (!link) throw KernelError(ENOMEM, what);
    rtnl_link_set_name(link.get(), spec.name.c_str());
    rtnl_link_set_link(link.get(), spec.master_index);
    // MacvlanMode's values are the kernel's MACVLAN_MODE_* (include/uapi/linux/if_link.h).
    if (int err = rtnl_link_macvlan_set_mode(link.get(), static_cast<uint32_t>(spec.mode)); err < 0)
        throw KernelError(detail::errno_from_nlerr(err), what);
    if (spec.mtu != 0) rtnl_link_set_mtu(link.get(), spec.mtu);
    if (!spec.mac.empty()) {
        auto mac = detail::parse_mac(spec.mac);
        if (!mac) throw KernelError(EINVAL, what + ": invalid MAC " + spec.mac);
        detail::NlAddrPtr addr(nl_addr_build(AF_LLC, mac->data(), mac->size()));
        if (!addr) throw KernelError(ENOMEM, what);
        rtnl_link_set_addr(link.get(), addr.get());
    }
    // IFLA_NET_NS_FD: the link is born in the target netns; IFLA_LINK still names the master
    // in this socket's netns.
    if (spec.target_netns_fd >= 0) rtnl_link_set_ns_fd(link.get(), spec.target_netns_fd);

    nl_msg* raw = nullptr;
    if (int err = rtnl_link_build_add_request(link.get(), NLM_F_CREATE | NLM_F_EXCL, &raw); err < 0)
        throw KernelError(detail::errno_from_nlerr(err), what);
    NlMsgPtr msg(raw);
    impl_->run(msg.get(), what);
}

void Rtnl::move_link(int index, int netns_fd, const std::string& new_name) {
    const std::string what = "move " + link_ref(index) + " to netns fd " + std::to_string(netns_fd) +
                             (new_name.empty() ? "" : " as " + new_name);
    NlMsgPtr msg = link_message(RTM_SETLINK, index);
    check_put(nla_put_u32(msg.get(), IFLA_NET_NS_FD, static_cast<uint32_t>(netns_fd)), what);
    if (!new_name.empty()) check_put(nla_put_string(msg.get(), IFLA_IFNAME, new_name.c_str()), what);
    impl_->run(msg.get(), what);
}

void Rtnl::rename_link(int index, const std::string& name) {
    const std::string what = "rename " + link_ref(index) + " to " + name;
    NlMsgPtr msg = link_message(RTM_SETLINK, index);
    check_put(nla_put_string(msg.get(), IFLA_IFNAME, name.c_str()), what);
    impl_->run(msg.get(), what);
}

void Rtnl::set_up(int index, bool up) {
    // ifi_change selects the flag bits to change, ifi_flags gives their new values.
    NlMsgPtr msg = link_message(RTM_SETLINK, index, IFF_UP, up ? IFF_UP : 0);
    impl_->run(msg.get(), std::string(up ? "set up " : "set down ") + link_ref(index));
}

void Rtnl::set_mtu(int index, unsigned mtu) {
    const std::string what = "set MTU " + std::to_string(mtu) + " on " + link_ref(index);
    NlMsgPtr msg = link_message(RTM_SETLINK, index);
    check_put(nla_put_u32(msg.get(), IFLA_MTU, mtu), what);
    impl_->run(msg.get(), what);
}

void Rtnl::set_mac(int index, const std::string& mac) {
    const std::string what = "set MAC " + mac + " on " + link_ref(index);
    auto bytes = detail::parse_mac(mac);
    if (!bytes) throw KernelError(EINVAL, what + ": invalid MAC");
    NlMsgPtr msg = link_message(RTM_SETLINK, index);
    check_put(nla_put(msg.get(), IFLA_ADDRESS, static_cast<int>(bytes->size()), bytes->data()), what);
    impl_->run(msg.get(), what);
}

void Rtnl::set_alias(int index, const std::string& alias) {
    const std::string what = (alias.empty() ? "clear alias of " : "set alias " + alias + " on ") + link_ref(index);
    // Like iproute2: the text without its NUL. A zero-length IFLA_IFALIAS removes the alias
    // (dev_set_alias() with len 0) instead of storing an empty string.
    NlMsgPtr msg = link_message(RTM_SETLINK, index);
    check_put(nla_put(msg.get(), IFLA_IFALIAS, static_cast<int>(alias.size()), alias.data()), what);
    impl_->run(msg.get(), what);
}

void Rtnl::delete_link(int index) {
    NlMsgPtr msg = link_message(RTM_DELLINK, index);
    impl_->run(msg.get(), "delete " + link_ref(index));
}

void Rtnl::delete_altname(int index, const std::string& altname) {
    const std::string what = "delete altname " + altname + " of " + link_ref(index);
    NlMsgPtr msg = link_message(RTM_DELLINKPROP, index);
    nlattr* props = nla_nest_start(msg.get(), IFLA_PROP_LIST);
    if (!props) throw KernelError(EMSGSIZE, what);
    check_put(nla_put_string(msg.get(), IFLA_ALT_IFNAME, altname.c_str()), what);
    nla_nest_end(msg.get(), props);

    detail::NlOutcome outcome = impl_->sock.transact(msg.get());
    // ENOENT: no link in this netns has that name. ENODATA: what older kernels answered.
    if (outcome.error == ENOENT || outcome.error == ENODATA) return;
    // EINVAL also comes back when the name exists but is not one of this link's altnames (it
    // is this link's primary name or any name of another link): for "make sure this altname
    // is gone" that is success too. Only a link that really carries it is an error.
    if (outcome.error == EINVAL) {
        auto link = link_by_index(index);
        if (link && std::find(link->altnames.begin(), link->altnames.end(), altname) == link->altnames.end()) return;
    }
    detail::throw_if_error(outcome, what);
}

}  // namespace rdmanet::netns
