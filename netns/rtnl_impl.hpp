#pragma once
// Internal to netns/: what the rtnl_*.cpp files share. Rtnl's methods are spread over one file
// per object kind (links, link changes, addresses, routes); they all talk through Impl's socket.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "nl_socket.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/rtnl.hpp"

namespace rdmanet::netns {

struct Rtnl::Impl {
    detail::NlSocket sock{NETLINK_ROUTE};

    // Sends `msg` and throws KernelError naming `what` when the kernel refuses it.
    void run(nl_msg* msg, const std::string& what, const detail::NlSocket::ReplyFn& on_reply = {});
    // Runs a dump built by `make_request`, again from the start while the kernel reports it
    // interrupted (NLM_F_DUMP_INTR: the table changed under it), at most kDumpAttempts times.
    // `reset` drops what a previous attempt collected. Throws KernelError(EINTR) when every
    // attempt was interrupted.
    template <class MakeRequest, class Reset>
    void dump(const std::string& what, MakeRequest make_request, Reset reset,
              const detail::NlSocket::ReplyFn& on_reply);
};

namespace detail {

// The same bound as containernetworking/plugins (commit b088cc31).
inline constexpr int kDumpAttempts = 5;

using MacBytes = std::array<std::uint8_t, 6>;
std::optional<MacBytes> parse_mac(const std::string& mac);
// Lower-case colon hex of any hardware address length; empty for length 0.
std::string format_hwaddr(const void* data, std::size_t len);
// IpAddress from the raw bytes of an nl_addr (4 or 16 bytes); nullopt for other lengths.
std::optional<base::IpAddress> ip_from_nl_addr(const nl_addr* addr);
// An nl_addr holding `ip` with prefix length `prefix`.
NlAddrPtr nl_addr_from_ip(const base::IpAddress& ip, int prefix);

// libnl's parse of one rtnetlink message into its object (rtnl_link for RTM_NEWLINK, rtnl_addr
// for RTM_NEWADDR ...); throws KernelError naming `what` when libnl cannot parse it.
nl_object* parse_object(nl_msg* msg, const char* what);
template <class T>
NlObjPtr<T> parse_as(nl_msg* msg, const char* what) {
    return NlObjPtr<T>(reinterpret_cast<T*>(parse_object(msg, what)));
}

}  // namespace detail

template <class MakeRequest, class Reset>
void Rtnl::Impl::dump(const std::string& what, MakeRequest make_request, Reset reset,
                      const detail::NlSocket::ReplyFn& on_reply) {
    for (int attempt = 1; attempt <= detail::kDumpAttempts; ++attempt) {
        reset();
        detail::NlMsgPtr msg = make_request();
        detail::NlOutcome outcome = sock.transact(msg.get(), on_reply);
        detail::throw_if_error(outcome, what);
        if (!outcome.interrupted) return;
    }
    throw KernelError(EINTR, what + ": dump interrupted " + std::to_string(detail::kDumpAttempts) + " times in a row");
}

}  // namespace rdmanet::netns
