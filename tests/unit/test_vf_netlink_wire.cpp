// PF-side VF netlink, byte for byte. The expected bytes are written out from the uapi layout
// table (attribute numbers, field order and sizes, padding of include/uapi/linux/if_link.h), not produced
// with the uapi structs the encoder uses, so a wrong size, field order, padding or byte order in
// the encoder shows up here. Decoding is checked on a reply laid out as the kernel's
// rtnl_fill_vfinfo() writes it.
#include <catch2/catch.hpp>

#include <linux/if_link.h>

#include <cstdint>
#include <vector>

#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/vf.hpp"

using namespace rdmanet::netns;
using Bytes = std::vector<std::uint8_t>;

// The uapi structs as the table describes them.
static_assert(sizeof(ifla_vf_mac) == 36);
static_assert(sizeof(ifla_vf_vlan) == 12);
static_assert(sizeof(ifla_vf_vlan_info) == 16);  // 14 bytes of fields + 2 of padding
static_assert(sizeof(ifla_vf_rate) == 12);
static_assert(sizeof(ifla_vf_guid) == 16);  // u32 vf, 4 bytes padding, u64 guid
static_assert(IFLA_VFINFO_LIST == 22 && IFLA_VF_INFO == 1 && IFLA_EXT_MASK == 29);
static_assert(IFLA_VF_MAC == 1 && IFLA_VF_VLAN == 2 && IFLA_VF_RATE == 6 && IFLA_VF_TRUST == 9);
static_assert(IFLA_VF_IB_NODE_GUID == 10 && IFLA_VF_IB_PORT_GUID == 11 && IFLA_VF_VLAN_LIST == 12);

namespace {

void le16(Bytes& b, std::uint16_t v) {
    b.push_back(v & 0xff);
    b.push_back(v >> 8);
}
void le32(Bytes& b, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back((v >> (8 * i)) & 0xff);
}
void le64(Bytes& b, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back((v >> (8 * i)) & 0xff);
}
// nlattr: u16 len (header + payload, unpadded), u16 type, payload padded to 4.
Bytes attr(std::uint16_t type, const Bytes& payload) {
    Bytes b;
    le16(b, static_cast<std::uint16_t>(4 + payload.size()));
    le16(b, type);
    b.insert(b.end(), payload.begin(), payload.end());
    while (b.size() % 4) b.push_back(0);
    return b;
}
constexpr std::uint16_t kNested = 0x8000;  // NLA_F_NESTED, which libnl sets on nests

Bytes nest(std::uint16_t type, const Bytes& inner) { return attr(type | kNested, inner); }

// nlmsghdr (len, type, flags 0, seq 0, pid 0) + ifinfomsg (all zero: family, index 0).
Bytes message(std::uint16_t type, const Bytes& attrs, std::uint16_t flags = 0) {
    Bytes b;
    le32(b, static_cast<std::uint32_t>(16 + 16 + attrs.size()));
    le16(b, type);
    le16(b, flags);
    le32(b, 0);
    le32(b, 0);
    Bytes ifi(16, 0);
    b.insert(b.end(), ifi.begin(), ifi.end());
    b.insert(b.end(), attrs.begin(), attrs.end());
    return b;
}

Bytes ifname(const std::string& name) {
    Bytes p(name.begin(), name.end());
    p.push_back(0);
    return attr(3, p);
}

Bytes setlink(const std::string& pf, const Bytes& vf_attr) {
    Bytes attrs = ifname(pf);
    const Bytes list = nest(22, nest(1, vf_attr));
    attrs.insert(attrs.end(), list.begin(), list.end());
    return message(19, attrs);
}

Bytes u32s(std::initializer_list<std::uint32_t> values) {
    Bytes b;
    for (auto v : values) le32(b, v);
    return b;
}

Bytes mac_payload(std::uint32_t vf, Bytes mac) {
    Bytes b = u32s({vf});
    mac.resize(32, 0);
    b.insert(b.end(), mac.begin(), mac.end());
    return b;
}

}  // namespace

TEST_CASE("VF setlink requests match the uapi layout byte for byte", "[vf][netlink]") {
    SECTION("IFLA_VF_MAC: u32 vf + 32-byte address") {
        const Bytes expected = setlink("ens1f0", attr(1, mac_payload(3, {0x0a, 0x58, 0x0a, 0x01, 0x00, 0x05})));
        CHECK(vf_wire::setlink_request("ens1f0", VfChange::set_mac(3, "0a:58:0a:01:00:05")) == expected);
        CHECK(expected.size() == 16 + 16 + 12 + 4 + 4 + 40);
    }
    SECTION("IFLA_VF_VLAN (802.1Q): u32 vf, vlan, qos") {
        CHECK(vf_wire::setlink_request("pf", VfChange::set_vlan(1, 100, 3, kVlanProto8021Q)) ==
              setlink("pf", attr(2, u32s({1, 100, 3}))));
    }
    SECTION("802.1ad goes through IFLA_VF_VLAN_LIST with a big-endian protocol and 2 bytes of padding") {
        Bytes info = u32s({2, 200, 5});
        info.push_back(0x88);
        info.push_back(0xa8);
        info.push_back(0);
        info.push_back(0);
        CHECK(vf_wire::setlink_request("pf", VfChange::set_vlan(2, 200, 5, kVlanProto8021AD)) ==
              setlink("pf", nest(12, attr(1, info))));
    }
    SECTION("rate, spoofchk, trust, link state") {
        CHECK(vf_wire::setlink_request("pf", VfChange::set_rate(0, 100, 1000)) ==
              setlink("pf", attr(6, u32s({0, 100, 1000}))));
        CHECK(vf_wire::setlink_request("pf", VfChange::set_spoofchk(4, false)) == setlink("pf", attr(4, u32s({4, 0}))));
        CHECK(vf_wire::setlink_request("pf", VfChange::set_trust(4, true)) == setlink("pf", attr(9, u32s({4, 1}))));
        CHECK(vf_wire::setlink_request("pf", VfChange::set_link_state(4, VfLinkState::disable)) ==
              setlink("pf", attr(5, u32s({4, 2}))));
    }
    SECTION("IB GUIDs: u32 vf, 4 bytes padding, u64 in host order") {
        Bytes node = u32s({7, 0});
        le64(node, 0xc211223344556677ull);
        const auto guid = parse_guid("c2:11:22:33:44:55:66:77");
        REQUIRE(guid);
        CHECK(*guid == 0xc211223344556677ull);
        CHECK(vf_wire::setlink_request("pf", VfChange::set_node_guid(7, *guid)) == setlink("pf", attr(10, node)));
        CHECK(vf_wire::setlink_request("pf", VfChange::set_port_guid(7, *guid)) == setlink("pf", attr(11, node)));
    }
    SECTION("an invalid MAC never reaches the kernel") {
        CHECK_THROWS_AS(vf_wire::setlink_request("pf", VfChange::set_mac(0, "zz:00:00:00:00:00")), KernelError);
    }
}

TEST_CASE("VF getlink request asks for VF info by name", "[vf][netlink]") {
    Bytes attrs = ifname("ens1f0");
    const Bytes mask = attr(29, u32s({1}));  // IFLA_EXT_MASK = RTEXT_FILTER_VF
    attrs.insert(attrs.end(), mask.begin(), mask.end());
    CHECK(vf_wire::getlink_request("ens1f0") == message(18, attrs));
}

namespace {

// One IFLA_VF_INFO as rtnl_fill_vfinfo() emits it.
Bytes kernel_vf_info(std::uint32_t vf, Bytes mac, std::uint32_t vlan, std::uint32_t qos, std::uint16_t proto,
                     std::uint32_t min_rate, std::uint32_t max_rate, std::uint32_t spoofchk, std::uint32_t link_state,
                     std::uint32_t trust, std::optional<std::uint64_t> guid) {
    Bytes inner = attr(1, mac_payload(vf, mac));
    auto add = [&](const Bytes& a) { inner.insert(inner.end(), a.begin(), a.end()); };
    add(attr(13, Bytes(32, 0xff)));                // IFLA_VF_BROADCAST
    add(attr(2, u32s({vf, vlan, qos})));           // IFLA_VF_VLAN
    add(attr(6, u32s({vf, min_rate, max_rate})));  // IFLA_VF_RATE
    add(attr(3, u32s({vf, max_rate})));            // IFLA_VF_TX_RATE
    add(attr(4, u32s({vf, spoofchk})));            // IFLA_VF_SPOOFCHK
    add(attr(5, u32s({vf, link_state})));          // IFLA_VF_LINK_STATE
    add(attr(7, u32s({vf, 0xffffffffu})));         // IFLA_VF_RSS_QUERY_EN
    add(attr(9, u32s({vf, trust})));               // IFLA_VF_TRUST
    if (guid) {
        Bytes g = u32s({vf, 0});
        le64(g, *guid);
        add(attr(10, g));
        add(attr(11, g));
    }
    Bytes vinfo = u32s({vf, vlan, qos});
    vinfo.push_back(proto >> 8);
    vinfo.push_back(proto & 0xff);
    vinfo.push_back(0);
    vinfo.push_back(0);
    add(nest(12, attr(1, vinfo)));  // IFLA_VF_VLAN_LIST
    Bytes stats;
    for (std::uint16_t t = 0; t < 4; ++t) {
        Bytes counter;
        le64(counter, 1000 + t);
        const Bytes a = attr(t, counter);
        stats.insert(stats.end(), a.begin(), a.end());
    }
    add(nest(8, stats));  // IFLA_VF_STATS
    return nest(1, inner);
}

}  // namespace

TEST_CASE("VF info is decoded from an RTM_NEWLINK reply", "[vf][netlink]") {
    Bytes list =
        kernel_vf_info(0, {0x0a, 0x58, 0x0a, 0x01, 0x00, 0x05}, 100, 3, 0x88a8, 10, 500, 1, 1, 0, std::nullopt);
    const Bytes second = kernel_vf_info(1, {}, 0, 0, 0x8100, 0, 0, 0xffffffffu, 0, 0xffffffffu, 0x0002c90300a0b001ull);
    list.insert(list.end(), second.begin(), second.end());
    Bytes attrs = ifname("ens1f0");
    const Bytes num_vf = attr(21, u32s({2}));
    attrs.insert(attrs.end(), num_vf.begin(), num_vf.end());
    const Bytes vfs = nest(22, list);
    attrs.insert(attrs.end(), vfs.begin(), vfs.end());
    const Bytes reply = message(16, attrs);  // RTM_NEWLINK

    const auto decoded = vf_wire::decode_newlink(reply.data(), reply.size());
    REQUIRE(decoded.size() == 2);
    const VfInfo& a = decoded[0];
    CHECK(a.index == 0);
    CHECK(a.mac == "0a:58:0a:01:00:05");
    CHECK(a.vlan == 100);
    CHECK(a.qos == 3);
    CHECK(a.vlan_proto == kVlanProto8021AD);
    CHECK(a.min_tx_rate == 10);
    CHECK(a.max_tx_rate == 500);
    CHECK(a.spoofchk == std::optional<bool>(true));
    CHECK(a.trust == std::optional<bool>(false));
    CHECK(a.link_state == VfLinkState::enable);
    CHECK_FALSE(a.node_guid);
    const VfInfo& b = decoded[1];
    CHECK(b.index == 1);
    CHECK(b.mac == "00:00:00:00:00:00");
    CHECK_FALSE(b.spoofchk);  // -1: not reported by the driver
    CHECK_FALSE(b.trust);
    REQUIRE(b.node_guid);
    CHECK(format_guid(*b.node_guid) == "00:02:c9:03:00:a0:b0:01");
    CHECK(b.port_guid == b.node_guid);

    SECTION("a link without SR-IOV has no VF list") {
        const Bytes plain = message(16, ifname("veth0"));
        CHECK(vf_wire::decode_newlink(plain.data(), plain.size()).empty());
    }
    SECTION("a truncated IFLA_VF_MAC is a protocol error, not garbage") {
        const Bytes bad = message(16, nest(22, nest(1, attr(1, u32s({0, 1, 2})))));
        try {
            vf_wire::decode_newlink(bad.data(), bad.size());
            FAIL("no exception");
        } catch (const KernelError& e) {
            CHECK(e.errno_value() == EPROTO);
        }
    }
    SECTION("a length field beyond the buffer is refused") {
        Bytes cut(reply.begin(), reply.begin() + 40);
        CHECK_THROWS_AS(vf_wire::decode_newlink(cut.data(), cut.size()), KernelError);
    }
}

TEST_CASE("GUID text conversion", "[vf]") {
    CHECK(parse_guid("00:00:00:00:00:00:00:01") == std::optional<std::uint64_t>(1));
    CHECK(parse_guid("FF:ff:00:00:00:00:00:00") == std::optional<std::uint64_t>(0xffff000000000000ull));
    CHECK_FALSE(parse_guid("00:00:00:00:00:00:00"));
    CHECK_FALSE(parse_guid("00:00:00:00:00:00:00:0g"));
    CHECK_FALSE(parse_guid("00-00-00-00-00-00-00-00"));
    CHECK(format_guid(0x0102030405060708ull) == "01:02:03:04:05:06:07:08");
}
