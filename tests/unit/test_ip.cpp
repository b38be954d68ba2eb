// IpAddress / IpNetwork: the value types under both the kernel layer and the IPAM range math.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <random>
#include <string>
#include <string_view>

#include "rdmanet/base/ip.hpp"
#include "support/catch_ip.hpp"

using rdmanet::base::IpAddress;
using rdmanet::base::IpNetwork;
using rdmanet::base::uint128;
using Family = IpAddress::Family;

namespace {

IpAddress ip(std::string_view text) {
    auto parsed = IpAddress::parse(text);
    INFO("address under test: " << text);
    REQUIRE(parsed);
    return *parsed;
}

IpNetwork net(std::string_view text) {
    auto parsed = IpNetwork::parse(text);
    INFO("network under test: " << text);
    REQUIRE(parsed);
    return *parsed;
}

constexpr uint128 u128(std::uint64_t hi, std::uint64_t lo) { return uint128{hi} << 64 | lo; }
constexpr uint128 kAllOnes = ~uint128{0};

}  // namespace

TEST_CASE("IpAddress::parse accepts dotted IPv4", "[ip]") {
    CHECK(ip("10.1.2.3").is_v4());
    CHECK(ip("10.1.2.3").family() == Family::v4);
    CHECK(ip("10.1.2.3").str() == "10.1.2.3");
    CHECK(ip("0.0.0.0").str() == "0.0.0.0");
    CHECK(ip("255.255.255.255").str() == "255.255.255.255");
    CHECK(ip("1.2.3.4").to_u128() == 0x01020304);
}

TEST_CASE("IpAddress::parse rejects malformed IPv4", "[ip]") {
    for (std::string_view bad :
         {"",           "1",        "1.2.3",    "1.2.3.4.5", "256.1.1.1",    "1.2.3.256", "1.2.3.-4",
          "a.b.c.d",    "1..2.3",   "1.2.3.4.", ".1.2.3.4",  " 1.2.3.4",     "1.2.3.4 ",  "1.2.3.4\n",
          "1.2.3.4/24", "01.2.3.4", "1.2.3.04", "0x1.2.3.4", "1.2.3.4%eth0", "１.2.3.4"}) {
        INFO("input: '" << bad << "'");
        CHECK_FALSE(IpAddress::parse(bad));
    }
}

TEST_CASE("IpAddress::parse rejects an embedded NUL", "[ip]") {
    // inet_pton alone would stop at the NUL and accept the prefix.
    CHECK_FALSE(IpAddress::parse(std::string_view("1.2.3.4\0junk", 12)));
    CHECK_FALSE(IpAddress::parse(std::string_view("::1\0", 4)));
    CHECK_FALSE(IpAddress::parse(std::string_view("\0", 1)));
}

TEST_CASE("IpAddress::parse reads only its view, not past it", "[ip]") {
    const std::string text = "10.0.0.1/24";
    auto parsed = IpAddress::parse(std::string_view(text).substr(0, 8));
    REQUIRE(parsed);
    CHECK(parsed->str() == "10.0.0.1");
    CHECK_FALSE(IpAddress::parse(std::string_view(text).substr(0, 9)));
}

TEST_CASE("IpAddress::parse accepts every RFC 4291 IPv6 form", "[ip]") {
    CHECK(ip("::").family() == Family::v6);
    CHECK(ip("::").str() == "::");
    CHECK(ip("::1").str() == "::1");
    CHECK(ip("fe80::1").str() == "fe80::1");
    CHECK(ip("2001:db8::").str() == "2001:db8::");
    // Full form, leading zeros and upper case all come back canonical (RFC 5952).
    CHECK(ip("2001:0db8:0000:0000:0000:0000:0000:0001").str() == "2001:db8::1");
    CHECK(ip("2001:DB8::A").str() == "2001:db8::a");
    CHECK(ip("1:0:0:1:0:0:0:1").str() == "1:0:0:1::1");
    CHECK(ip("1:2:3:4:5:6:7:8").str() == "1:2:3:4:5:6:7:8");
    CHECK(ip("1::2:3:4:5:6:7").str() == "1:0:2:3:4:5:6:7");
    // Embedded IPv4 stays IPv6.
    CHECK(ip("::ffff:1.2.3.4").family() == Family::v6);
    CHECK(ip("::ffff:1.2.3.4").str() == "::ffff:1.2.3.4");
    CHECK(ip("::ffff:1.2.3.4").to_u128() == u128(0, 0xffff01020304));
    // The longest valid text (45 characters) fits.
    CHECK(ip("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255").to_u128() == kAllOnes);
}

TEST_CASE("IpAddress::parse rejects malformed IPv6", "[ip]") {
    for (std::string_view bad :
         {":", ":::", "1::2::3", "12345::", "g::1", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "fe80::1%eth0", "[::1]",
          "::1/128", " ::1", "::1 ", "1:2:3:4:5:6:7:8::", "::ffff:1.2.3", "::ffff:256.1.1.1", "::1.2.3.4:5",
          "0000:0000:0000:0000:0000:0000:0000:0000:0"}) {
        INFO("input: '" << bad << "'");
        CHECK_FALSE(IpAddress::parse(bad));
    }
    // Longer than any valid text: rejected before inet_pton sees it.
    CHECK_FALSE(IpAddress::parse(std::string(46, '1')));
    CHECK_FALSE(IpAddress::parse(std::string(1000, ':')));
}

TEST_CASE("IpAddress family helpers", "[ip]") {
    const IpAddress v4 = ip("192.0.2.1"), v6 = ip("2001:db8::1");
    CHECK(v4.af() == AF_INET);
    CHECK(v6.af() == AF_INET6);
    CHECK(v4.bits() == 32);
    CHECK(v6.bits() == 128);
    CHECK(v4.size() == 4);
    CHECK(v6.size() == 16);
    CHECK_FALSE(v6.is_v4());
    // data() is network byte order, as the kernel wants it.
    CHECK(v4.data()[0] == 192);
    CHECK(v4.data()[3] == 1);
    CHECK(v6.data()[0] == 0x20);
    CHECK(v6.data()[1] == 0x01);
    CHECK(v6.data()[15] == 0x01);
    unsigned char buf[16];
    REQUIRE(inet_pton(AF_INET6, "2001:db8::1", buf) == 1);
    CHECK(std::equal(buf, buf + 16, v6.data()));
}

TEST_CASE("IpAddress default and unspecified", "[ip]") {
    const IpAddress none;
    CHECK(none.is_v4());
    CHECK(none.str() == "0.0.0.0");
    CHECK(none.is_unspecified());
    CHECK(ip("0.0.0.0").is_unspecified());
    CHECK(ip("::").is_unspecified());
    CHECK_FALSE(ip("0.0.0.1").is_unspecified());
    CHECK_FALSE(ip("::1").is_unspecified());
    CHECK(none == ip("0.0.0.0"));
}

TEST_CASE("IpAddress ordering and equality", "[ip]") {
    CHECK(ip("10.0.0.1") < ip("10.0.0.2"));
    CHECK(ip("9.255.255.255") < ip("10.0.0.0"));  // numeric, not textual
    CHECK(ip("10.0.0.10") > ip("10.0.0.9"));
    CHECK(ip("2001:db8::1") == ip("2001:0db8:0:0::1"));
    CHECK(ip("2001:db8::1") != ip("2001:db8::2"));
    CHECK(ip("::1") < ip("::2"));
    CHECK(ip("::ffff:0:0") < ip("1::"));
    // Families never compare equal, even for the same number; all v4 sort before v6.
    CHECK(IpAddress::from_u128(Family::v4, 1) != IpAddress::from_u128(Family::v6, 1));
    CHECK(ip("255.255.255.255") < ip("::"));
}

TEST_CASE("IpAddress u128 conversions", "[ip][u128]") {
    SECTION("IPv4 uses the low 32 bits only") {
        CHECK(IpAddress::from_u128(Family::v4, 0x0a000001).str() == "10.0.0.1");
        CHECK(IpAddress::from_u128(Family::v4, u128(0xdead, 0x1'0a00'0001)).str() == "10.0.0.1");
        CHECK(IpAddress::from_u128(Family::v4, 0xffffffff).str() == "255.255.255.255");
        CHECK(IpAddress::from_u128(Family::v4, 0xffffffff) == ip("255.255.255.255"));
        CHECK(ip("255.255.255.255").to_u128() == 0xffffffffu);
    }
    SECTION("IPv6 covers all 128 bits") {
        CHECK(IpAddress::from_u128(Family::v6, 0).str() == "::");
        CHECK(IpAddress::from_u128(Family::v6, 1).str() == "::1");
        CHECK(IpAddress::from_u128(Family::v6, kAllOnes).str() == "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
        CHECK(IpAddress::from_u128(Family::v6, uint128{1} << 127).str() == "8000::");
        CHECK(ip("2001:db8::1").to_u128() == u128(0x20010db800000000, 1));
    }
    SECTION("values around 2^63 and 2^64 round-trip") {
        for (uint128 v : {uint128{0}, uint128{1}, (uint128{1} << 63) - 1, uint128{1} << 63, (uint128{1} << 63) + 1,
                          (uint128{1} << 64) - 1, uint128{1} << 64, (uint128{1} << 64) + 1, uint128{1} << 127,
                          kAllOnes - 1, kAllOnes}) {
            const IpAddress a = IpAddress::from_u128(Family::v6, v);
            CHECK(a.to_u128() == v);
            CHECK(ip(a.str()) == a);  // and through text
        }
        CHECK(IpAddress::from_u128(Family::v6, uint128{1} << 63).str() == "::8000:0:0:0");
        CHECK(IpAddress::from_u128(Family::v6, uint128{1} << 64).str() == "0:0:0:1::");
    }
    SECTION("random values round-trip through u128 and text") {
        std::mt19937_64 rng(0x5eed);
        for (int i = 0; i < 2000; ++i) {
            const uint128 v = u128(rng(), rng());
            const IpAddress a6 = IpAddress::from_u128(Family::v6, v);
            REQUIRE(a6.to_u128() == v);
            REQUIRE(ip(a6.str()) == a6);
            const IpAddress a4 = IpAddress::from_u128(Family::v4, v);
            REQUIRE(a4.to_u128() == (v & 0xffffffff));
            REQUIRE(ip(a4.str()) == a4);
        }
    }
    SECTION("offsets of 2^63 and more from a /64 or /56 base (IPAM range math)") {
        const IpNetwork range = net("2001:db8:1:2::/64");
        const uint128 base = range.first().to_u128();
        const IpAddress a = IpAddress::from_u128(Family::v6, base + (uint128{1} << 63) + 5);
        CHECK(a.str() == "2001:db8:1:2:8000::5");
        CHECK(range.contains(a));
        const IpAddress top = IpAddress::from_u128(Family::v6, base + ((uint128{1} << 64) - 1));
        CHECK(top == range.last());
        CHECK_FALSE(range.contains(IpAddress::from_u128(Family::v6, base + (uint128{1} << 64))));
        // Carry across the 64-bit halves.
        CHECK(IpAddress::from_u128(Family::v6, ip("2001:db8::ffff:ffff:ffff:ffff").to_u128() + 1).str() ==
              "2001:db8:0:1::");
        const IpNetwork wide = net("fd00::/56");
        const IpAddress b = IpAddress::from_u128(Family::v6, wide.first().to_u128() + 3 * (uint128{1} << 64) + 7);
        CHECK(b.str() == "fd00:0:0:3::7");
        CHECK(wide.contains(b));
        CHECK(b.to_u128() - wide.first().to_u128() == 3 * (uint128{1} << 64) + 7);
    }
}

TEST_CASE("IpNetwork::parse", "[ip][cidr]") {
    SECTION("valid prefixes keep the host bits") {
        const IpNetwork n = net("10.1.2.3/24");
        CHECK(n.address == ip("10.1.2.3"));
        CHECK(n.prefix == 24);
        CHECK(n.str() == "10.1.2.3/24");
        CHECK(net("0.0.0.0/0").prefix == 0);
        CHECK(net("1.2.3.4/32").prefix == 32);
        CHECK(net("::/0").prefix == 0);
        CHECK(net("::1/128").prefix == 128);
        CHECK(net("2001:DB8::1/64").str() == "2001:db8::1/64");
        CHECK(net("::ffff:10.0.0.0/104").address.family() == Family::v6);
    }
    SECTION("leading zeros in the prefix are accepted, like Go's net.ParseCIDR") {
        CHECK(net("10.0.0.0/08").prefix == 8);
        CHECK(net("10.0.0.0/000").prefix == 0);
        CHECK(net("::/064").prefix == 64);
    }
    SECTION("malformed or out of range") {
        for (std::string_view bad : {"",
                                     "/",
                                     "/24",
                                     "10.0.0.0",
                                     "10.0.0.0/",
                                     "10.0.0.0/33",
                                     "10.0.0.0/-1",
                                     "10.0.0.0/-0",
                                     "10.0.0.0/+8",
                                     "10.0.0.0/ 8",
                                     "10.0.0.0/8 ",
                                     " 10.0.0.0/8",
                                     "10.0.0.0/0x8",
                                     "10.0.0.0/8/8",
                                     "10.0.0.0//8",
                                     "10.0.0.0/1000",
                                     "10.0.0.0/0008",
                                     "10.0.0.0/a",
                                     "10.0.0/8",
                                     "256.0.0.0/8",
                                     "::/129",
                                     "::/200",
                                     "::/-0",
                                     "fe80::1%eth0/64",
                                     "[::]/0",
                                     "10.0.0.0\\8"}) {
            INFO("input: '" << bad << "'");
            CHECK_FALSE(IpNetwork::parse(bad));
        }
        CHECK_FALSE(IpNetwork::parse(std::string_view("10.0.0.0/8\0", 11)));
        CHECK_FALSE(IpNetwork::parse(std::string_view("10.0.0.0\0/8", 11)));
    }
}

TEST_CASE("IpNetwork::parse_address_or_cidr", "[ip][cidr]") {
    auto a = IpNetwork::parse_address_or_cidr("10.0.0.1");
    REQUIRE(a);
    CHECK(a->prefix == 32);
    CHECK(a->address == ip("10.0.0.1"));
    auto b = IpNetwork::parse_address_or_cidr("2001:db8::1");
    REQUIRE(b);
    CHECK(b->prefix == 128);
    auto c = IpNetwork::parse_address_or_cidr("10.0.0.1/24");
    REQUIRE(c);
    CHECK(c->prefix == 24);
    CHECK_FALSE(IpNetwork::parse_address_or_cidr(""));
    CHECK_FALSE(IpNetwork::parse_address_or_cidr("bad"));
    CHECK_FALSE(IpNetwork::parse_address_or_cidr("10.0.0.1/"));
    CHECK_FALSE(IpNetwork::parse_address_or_cidr("10.0.0.1/33"));
}

TEST_CASE("IpNetwork masked, first and last", "[ip][cidr]") {
    CHECK(net("10.1.2.3/24").masked() == net("10.1.2.0/24"));
    CHECK(net("10.1.2.3/24").first() == ip("10.1.2.0"));
    CHECK(net("10.1.2.3/24").last() == ip("10.1.2.255"));
    CHECK(net("10.1.2.3/32").masked() == net("10.1.2.3/32"));
    CHECK(net("10.1.2.3/32").last() == ip("10.1.2.3"));
    CHECK(net("10.1.2.3/31").first() == ip("10.1.2.2"));
    CHECK(net("10.1.2.3/31").last() == ip("10.1.2.3"));
    CHECK(net("255.255.255.255/1").masked() == net("128.0.0.0/1"));
    CHECK(net("10.1.2.3/0").masked() == net("0.0.0.0/0"));
    CHECK(net("10.1.2.3/0").last() == ip("255.255.255.255"));
    CHECK(net("2001:db8::1/64").masked() == net("2001:db8::/64"));
    CHECK(net("2001:db8::1/64").last() == ip("2001:db8::ffff:ffff:ffff:ffff"));
    CHECK(net("2001:db8::1/128").masked() == net("2001:db8::1/128"));
    CHECK(net("2001:db8::1/128").last() == ip("2001:db8::1"));
    CHECK(net("2001:db8::3/127").first() == ip("2001:db8::2"));
    CHECK(net("2001:db8::1/0").masked() == net("::/0"));
    CHECK(net("2001:db8::1/0").last() == ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
    CHECK(net("2001:db8:7fff::/33").last() == ip("2001:db8:7fff:ffff:ffff:ffff:ffff:ffff"));
    CHECK(net("2001:db8:ffff::/33").first() == ip("2001:db8:8000::"));
    // masked() keeps the family and the prefix.
    CHECK(net("10.9.8.7/13").masked().address.is_v4());
    CHECK(net("10.9.8.7/13").masked().prefix == 13);
    // A v4 /0 never leaks bits into the unused bytes of the value.
    CHECK(net("10.1.2.3/0").last().to_u128() == 0xffffffffu);
}

TEST_CASE("IpNetwork::contains", "[ip][cidr]") {
    const IpNetwork ten = net("10.0.0.0/8");
    CHECK(ten.contains(ip("10.0.0.0")));
    CHECK(ten.contains(ip("10.255.255.255")));
    CHECK_FALSE(ten.contains(ip("11.0.0.0")));
    CHECK_FALSE(ten.contains(ip("9.255.255.255")));
    // Host bits in the network do not matter.
    CHECK(net("10.1.2.3/24").contains(ip("10.1.2.200")));
    CHECK_FALSE(net("10.1.2.3/24").contains(ip("10.1.3.0")));
    CHECK(net("0.0.0.0/0").contains(ip("255.255.255.255")));
    CHECK(net("1.2.3.4/32").contains(ip("1.2.3.4")));
    CHECK_FALSE(net("1.2.3.4/32").contains(ip("1.2.3.5")));
    // Never across families, not even for v4-mapped addresses or /0.
    CHECK_FALSE(ten.contains(ip("::ffff:10.0.0.1")));
    CHECK_FALSE(net("0.0.0.0/0").contains(ip("::")));
    CHECK_FALSE(net("::/0").contains(ip("0.0.0.0")));
    CHECK(net("::/0").contains(ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));
    CHECK(net("2001:db8::/64").contains(ip("2001:db8::ffff:ffff:ffff:ffff")));
    CHECK_FALSE(net("2001:db8::/64").contains(ip("2001:db8:0:1::")));
    CHECK(net("2001:db8::1/128").contains(ip("2001:db8::1")));
    CHECK_FALSE(net("2001:db8::1/128").contains(ip("2001:db8::")));
}

TEST_CASE("IpNetwork every prefix length of both families", "[ip][cidr]") {
    for (const char* base : {"172.31.255.77", "2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff"}) {
        const IpAddress addr = ip(base);
        for (int prefix = 0; prefix <= addr.bits(); ++prefix) {
            INFO(base << "/" << prefix);
            const IpNetwork n{addr, prefix};
            REQUIRE(IpNetwork::parse(n.str()) == n);
            const IpNetwork m = n.masked();
            REQUIRE(m.prefix == prefix);
            REQUIRE(m.masked() == m);  // idempotent
            const uint128 first = n.first().to_u128();
            const uint128 last = n.last().to_u128();
            const int host_bits = addr.bits() - prefix;
            const uint128 span = host_bits == 128 ? kAllOnes : (uint128{1} << host_bits) - 1;
            REQUIRE(last - first == span);
            REQUIRE((first & span) == 0);  // aligned
            REQUIRE(n.contains(addr));
            REQUIRE(n.contains(n.first()));
            REQUIRE(n.contains(n.last()));
            const uint128 max = addr.is_v4() ? 0xffffffffu : kAllOnes;
            if (last != max) REQUIRE_FALSE(n.contains(IpAddress::from_u128(addr.family(), last + 1)));
            if (first != 0) REQUIRE_FALSE(n.contains(IpAddress::from_u128(addr.family(), first - 1)));
        }
        CHECK_FALSE(IpNetwork::parse(std::string(base) + "/" + std::to_string(addr.bits() + 1)));
    }
}

TEST_CASE("IpNetwork ordering and equality", "[ip][cidr]") {
    CHECK(net("10.0.0.0/24") == net("10.0.0.0/24"));
    CHECK(net("10.0.0.0/24") != net("10.0.0.0/25"));
    CHECK(net("10.0.0.0/24") < net("10.0.0.0/25"));  // address first, then prefix
    CHECK(net("10.0.0.0/25") < net("10.0.0.1/24"));
    CHECK(net("10.0.0.1/24") != net("10.0.0.0/24"));  // host bits count for equality
    const IpNetwork none;
    CHECK(none.prefix == 0);
    CHECK(none.str() == "0.0.0.0/0");
}
