// Rtnl's socket and the value conversions shared by the rtnl_*.cpp files.
#include <netlink/addr.h>

#include <cstring>

#include "rtnl_impl.hpp"

namespace rdmanet::netns {

Rtnl::Rtnl() : impl_(std::make_unique<Impl>()) {}
Rtnl::~Rtnl() = default;

void Rtnl::Impl::run(nl_msg* msg, const std::string& what, const detail::NlSocket::ReplyFn& on_reply) {
    detail::throw_if_error(sock.transact(msg, on_reply), what);
}

namespace detail {
namespace {
int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
}  // namespace

std::optional<MacBytes> parse_mac(const std::string& mac) {
    // Exactly six two-digit groups separated by ':' ("aa:bb:cc:dd:ee:ff" is 17 characters).
    MacBytes bytes{};
    if (mac.size() != 3 * bytes.size() - 1) return std::nullopt;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        const int hi = hex_value(mac[3 * i]);
        const int lo = hex_value(mac[3 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        if (i + 1 < bytes.size() && mac[3 * i + 2] != ':') return std::nullopt;
        bytes[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return bytes;
}

std::string format_hwaddr(const void* data, std::size_t len) {
    static constexpr char digits[] = "0123456789abcdef";
    const auto* bytes = static_cast<const std::uint8_t*>(data);
    std::string out;
    for (std::size_t i = 0; i < len; ++i) {
        if (i) out += ':';
        out += digits[bytes[i] >> 4];
        out += digits[bytes[i] & 0xf];
    }
    return out;
}

std::optional<base::IpAddress> ip_from_nl_addr(const nl_addr* addr) {
    if (!addr) return std::nullopt;
    auto* raw = const_cast<nl_addr*>(addr);  // libnl's getters are not const-correct
    const unsigned len = nl_addr_get_len(raw);
    if (len != 4 && len != 16) return std::nullopt;
    const auto* bytes = static_cast<const std::uint8_t*>(nl_addr_get_binary_addr(raw));
    base::uint128 value = 0;
    for (unsigned i = 0; i < len; ++i) value = value << 8 | bytes[i];
    return base::IpAddress::from_u128(len == 4 ? base::IpAddress::Family::v4 : base::IpAddress::Family::v6, value);
}

NlAddrPtr nl_addr_from_ip(const base::IpAddress& ip, int prefix) {
    NlAddrPtr addr(nl_addr_build(ip.af(), ip.data(), ip.size()));
    if (!addr) throw KernelError(ENOMEM, "allocate address " + ip.str());
    nl_addr_set_prefixlen(addr.get(), prefix);
    return addr;
}

nl_object* parse_object(nl_msg* msg, const char* what) {
    // libnl hands the object to a C callback: only take a reference there, so that nothing
    // which may throw runs inside libnl's frames.
    nl_object* parsed = nullptr;
    const int err = nl_msg_parse(
        msg,
        [](nl_object* obj, void* arg) {
            auto** slot = static_cast<nl_object**>(arg);
            if (*slot) return;
            nl_object_get(obj);
            *slot = obj;
        },
        &parsed);
    if (err < 0 || !parsed) {
        if (parsed) nl_object_put(parsed);
        throw KernelError(err < 0 ? errno_from_nlerr(err) : EPROTO, std::string("parse ") + what);
    }
    return parsed;
}

}  // namespace detail

bool is_valid_mac(const std::string& mac) { return detail::parse_mac(mac).has_value(); }

}  // namespace rdmanet::netns
