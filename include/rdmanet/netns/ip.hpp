#pragma once
// IP address and prefix value types shared by the kernel layer (addresses, routes) and the IPAM
// (range math over full 128-bit offsets). Pure values: no I/O.
#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmanet::netns {

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
    int af() const;                    // AF_INET or AF_INET6
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
    IpAddress first() const { return masked().address; }   // network address
    IpAddress last() const;                                 // broadcast / all-ones host part
    bool contains(const IpAddress& ip) const;
    std::string str() const;

    friend auto operator<=>(const IpNetwork&, const IpNetwork&) = default;
};

}  // namespace rdmanet::netns
