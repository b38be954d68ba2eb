#pragma once
// IP address and prefix value types shared by the kernel layer (addresses, routes) and the IPAM
// (range math over full 128-bit offsets). Pure values: no I/O.
#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <arpa/inet.h>
#include <charconv>
#include <netinet/in.h>
#include <sys/socket.h>

namespace rdmanet::base {

using uint128 = unsigned __int128;

class IpAddress {
public:
    enum class Family : std::uint8_t { v4 = 4, v6 = 6 };

    IpAddress() = default;
    // Accepts dotted IPv4 and any RFC 4291 IPv6 text form; nullopt on anything else.
    static std::optional<IpAddress> parse(std::string_view text);
    // Host-order integer value; for v4 only the low 32 bits are used.
    static IpAddress from_u128(Family family, uint128 value);

    Family family() const { return family_; }
    bool is_v4() const { return family_ == Family::v4; }
    int af() const;  // AF_INET or AF_INET6
    int bits() const { return is_v4() ? 32 : 128; }
    const std::uint8_t* data() const { return bytes_.data(); }
    std::size_t size() const { return is_v4() ? 4 : 16; }
    uint128 to_u128() const;
    std::string str() const;
    bool is_unspecified() const { return to_u128() == 0; }

    friend auto operator<=>(const IpAddress&, const IpAddress&) = default;

private:
    Family family_ = Family::v4;
    std::array<std::uint8_t, 16> bytes_{};
};

// An address with a prefix length, as written in CIDR notation. Host bits are kept
// (10.1.0.5/24 is an interface address); masked() gives the network.
struct IpNetwork {
    IpAddress address;
    int prefix = 0;

    // "a.b.c.d/n" or "x::y/n"; nullopt when malformed or the prefix is out of range.
    static std::optional<IpNetwork> parse(std::string_view cidr);
    // Like parse, but a bare address is accepted as a host prefix (/32 or /128).
    static std::optional<IpNetwork> parse_address_or_cidr(std::string_view text);

    IpNetwork masked() const;
    IpAddress first() const { return masked().address; }  // network address
    IpAddress last() const;                               // broadcast / all-ones host part
    bool contains(const IpAddress& ip) const;
    std::string str() const;

    friend auto operator<=>(const IpNetwork&, const IpNetwork&) = default;
};

// Definitions (header-only so that every layer can use the value types without linking anything).

inline std::optional<IpAddress> IpAddress::parse(std::string_view text) {
    // inet_pton needs a NUL-terminated string; the longest valid IPv6 text is 45 characters.
    if (text.empty() || text.size() > INET6_ADDRSTRLEN) return std::nullopt;
    // inet_pton would stop at an embedded NUL and accept "1.2.3.4\0junk".
    if (text.find('\0') != std::string_view::npos) return std::nullopt;
    char buf[INET6_ADDRSTRLEN + 1] = {};
    text.copy(buf, text.size());
    IpAddress ip;
    if (text.find(':') == std::string_view::npos) {
        if (inet_pton(AF_INET, buf, ip.bytes_.data()) != 1) return std::nullopt;
        ip.family_ = Family::v4;
    } else {
        if (inet_pton(AF_INET6, buf, ip.bytes_.data()) != 1) return std::nullopt;
        ip.family_ = Family::v6;
    }
    return ip;
}

inline IpAddress IpAddress::from_u128(Family family, uint128 value) {
    IpAddress ip;
    ip.family_ = family;
    const std::size_t n = ip.size();
    for (std::size_t i = 0; i < n; ++i) {
        ip.bytes_[n - 1 - i] = static_cast<std::uint8_t>(value & 0xff);
        value >>= 8;
    }
    return ip;
}

inline int IpAddress::af() const { return is_v4() ? AF_INET : AF_INET6; }

inline uint128 IpAddress::to_u128() const {
    uint128 value = 0;
    for (std::size_t i = 0; i < size(); ++i) value = (value << 8) | bytes_[i];
    return value;
}

inline std::string IpAddress::str() const {
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(af(), bytes_.data(), buf, sizeof buf);
    return buf;
}

namespace detail {
inline uint128 host_mask(int bits, int prefix) {
    const int host_bits = bits - prefix;
    if (host_bits <= 0) return 0;
    if (host_bits >= 128) return ~uint128{0};
    return (uint128{1} << host_bits) - 1;
}
}  // namespace detail

inline std::optional<IpNetwork> IpNetwork::parse(std::string_view cidr) {
    const auto slash = cidr.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    auto ip = IpAddress::parse(cidr.substr(0, slash));
    if (!ip) return std::nullopt;
    const auto digits = cidr.substr(slash + 1);
    if (digits.empty() || digits.size() > 3) return std::nullopt;
    // Decimal digits only: from_chars would take a sign ("/-0" as /0). Leading zeros ("/08")
    // stay accepted, as Go's net.ParseCIDR (and so whereabouts) accepts them.
    for (char c : digits)
        if (c < '0' || c > '9') return std::nullopt;
    int prefix = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
    if (prefix < 0 || prefix > ip->bits()) return std::nullopt;
    return IpNetwork{*ip, prefix};
}

inline std::optional<IpNetwork> IpNetwork::parse_address_or_cidr(std::string_view text) {
    if (text.find('/') != std::string_view::npos) return parse(text);
    auto ip = IpAddress::parse(text);
    if (!ip) return std::nullopt;
    return IpNetwork{*ip, ip->bits()};
}

inline IpNetwork IpNetwork::masked() const {
    const uint128 value = address.to_u128() & ~detail::host_mask(address.bits(), prefix);
    return IpNetwork{IpAddress::from_u128(address.family(), value), prefix};
}

inline IpAddress IpNetwork::last() const {
    const uint128 value = address.to_u128() | detail::host_mask(address.bits(), prefix);
    return IpAddress::from_u128(address.family(), value);
}

inline bool IpNetwork::contains(const IpAddress& ip) const {
    if (ip.family() != address.family()) return false;
    const uint128 mask = ~detail::host_mask(address.bits(), prefix);
    return (ip.to_u128() & mask) == (address.to_u128() & mask);
}

inline std::string IpNetwork::str() const { return address.str() + "/" + std::to_string(prefix); }

}  // namespace rdmanet::base
