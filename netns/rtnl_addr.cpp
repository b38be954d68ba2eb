// Interface addresses: RTM_NEWADDR through libnl's rtnl_addr, and dumps filtered by link.
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/route/addr.h>

#include "rtnl_impl.hpp"

namespace rdmanet::netns {

using detail::NlMsgPtr;
using detail::NlObjPtr;

void Rtnl::add_address(int index, const base::IpNetwork& address, bool nodad) {
    const std::string what = "add address " + address.str() + " to link #" + std::to_string(index);
    NlObjPtr<rtnl_addr> addr(rtnl_addr_alloc());
    if (!addr) throw KernelError(ENOMEM, what);
    rtnl_addr_set_ifindex(addr.get(), index);
    rtnl_addr_set_family(addr.get(), address.address.af());
    detail::NlAddrPtr local = detail::nl_addr_from_ip(address.address, address.prefix);
    // Also sets the prefix length (from `local`) and, without a peer, IFA_ADDRESS = IFA_LOCAL.
    if (int err = rtnl_addr_set_local(addr.get(), local.get()); err < 0)
        throw KernelError(detail::errno_from_nlerr(err), what);
    // IPv4 gets its broadcast address like the reference plugins set it (vishvananda/netlink
    // AddrAdd): all host bits set, except on /31 and /32 which have no broadcast.
    if (address.address.is_v4() && address.prefix < 31) {
        detail::NlAddrPtr brd = detail::nl_addr_from_ip(address.last(), address.prefix);
        if (int err = rtnl_addr_set_broadcast(addr.get(), brd.get()); err < 0)
            throw KernelError(detail::errno_from_nlerr(err), what);
    }
    // IFA_F_NODAD: no duplicate address detection, the address is usable at once instead of
    // "tentative" for about a second (kubernetes #54651).
    if (!address.address.is_v4() && nodad) rtnl_addr_set_flags(addr.get(), IFA_F_NODAD);

    nl_msg* raw = nullptr;
    if (int err = rtnl_addr_build_add_request(addr.get(), NLM_F_CREATE | NLM_F_EXCL, &raw); err < 0)
        throw KernelError(detail::errno_from_nlerr(err), what);
    NlMsgPtr msg(raw);
    impl_->run(msg.get(), what);
}

std::vector<base::IpNetwork> Rtnl::addresses(int index) {
    std::vector<base::IpNetwork> result;
    for (const AddressState& state : address_states(index)) result.push_back(state.address);
    return result;
}

std::vector<AddressState> Rtnl::address_states(int index) {
    std::vector<AddressState> result;
    impl_->dump(
        "dump address states of link #" + std::to_string(index),
        [] {
            ifaddrmsg ifa{};
            ifa.ifa_family = AF_UNSPEC;
            return detail::new_message(RTM_GETADDR, NLM_F_DUMP, &ifa, sizeof ifa);
        },
        [&] { result.clear(); },
        [&](nl_msg* reply) {
            if (nlmsg_hdr(reply)->nlmsg_type != RTM_NEWADDR) return;
            // Cheap filter on the fixed header before libnl builds an object.
            const auto* ifa = static_cast<const ifaddrmsg*>(nlmsg_data(nlmsg_hdr(reply)));
            if (static_cast<int>(ifa->ifa_index) != index) return;
            NlObjPtr<rtnl_addr> addr = detail::parse_as<rtnl_addr>(reply, "RTM_NEWADDR");
            // libnl reports IPv6's lone IFA_ADDRESS as the local address too.
            auto ip = detail::ip_from_nl_addr(rtnl_addr_get_local(addr.get()));
            if (!ip) return;
            // libnl reads IFA_FLAGS (32 bits) when present, else the header's 8 bits.
            const unsigned flags = rtnl_addr_get_flags(addr.get());
            result.push_back(AddressState{base::IpNetwork{*ip, rtnl_addr_get_prefixlen(addr.get())},
                                          (flags & IFA_F_TENTATIVE) != 0, (flags & IFA_F_DADFAILED) != 0});
        });
    return result;
}

}  // namespace rdmanet::netns
