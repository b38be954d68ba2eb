// RDMA netlink (nldev) and IPoIB rtnetlink messages, byte for byte against the uapi layouts
// (include/uapi/rdma/rdma_netlink.h, include/uapi/linux/{netlink,if_link}.h), and decoding of
// replies built the way the kernel's nldev.c builds them.
#include <catch2/catch.hpp>

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <rdma/rdma_netlink.h>

#include <cstring>
#include <string>
#include <vector>

#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/ipoib.hpp"
#include "rdmanet/netns/rdma.hpp"

using namespace rdmanet::netns;
using Bytes = std::vector<std::uint8_t>;

namespace {

// Little-endian helpers (x86-64 and every platform the kernel lab runs on).
void u16(Bytes& b, std::uint16_t v) { b.push_back(v & 0xff), b.push_back(v >> 8); }
void u32(Bytes& b, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back((v >> (8 * i)) & 0xff);
}
// An attribute as nla_put would write it: len = 4 + payload, padded to 4.
void attr(Bytes& b, std::uint16_t type, const Bytes& payload) {
    u16(b, static_cast<std::uint16_t>(4 + payload.size()));
    u16(b, type);
    b.insert(b.end(), payload.begin(), payload.end());
    while (b.size() % 4) b.push_back(0);
}
Bytes le32(std::uint32_t v) {
    Bytes b;
    u32(b, v);
    return b;
}
Bytes le16(std::uint16_t v) {
    Bytes b;
    u16(b, v);
    return b;
}
Bytes le64(std::uint64_t v) {
    Bytes b;
    for (int i = 0; i < 8; ++i) b.push_back((v >> (8 * i)) & 0xff);
    return b;
}
Bytes str(const std::string& s) {
    Bytes b(s.begin(), s.end());
    b.push_back(0);
    return b;
}
Bytes header(std::uint32_t len, std::uint16_t type, std::uint16_t flags, std::uint32_t seq) {
    Bytes b;
    u32(b, len), u16(b, type), u16(b, flags), u32(b, seq), u32(b, 0);
    return b;
}

}  // namespace

TEST_CASE("nldev message types are (client << 10) + op", "[rdma][unit]") {
    CHECK(rdma_wire::type_of(rdma_wire::kCmdGet) == 0x1401);
    CHECK(rdma_wire::type_of(rdma_wire::kCmdSet) == 0x1402);
    CHECK(rdma_wire::type_of(rdma_wire::kCmdSysGet) == 0x1406);
    CHECK(rdma_wire::type_of(rdma_wire::kCmdSysSet) == 0x1407);
    CHECK(rdma_wire::type_of(rdma_wire::kCmdGet) == RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET));
    CHECK(rdma_wire::kAttrNetnsMode == 66);
    CHECK(rdma_wire::kAttrNetNsFd == 68);
}

TEST_CASE("SYS_GET is a bare header with REQUEST|ACK", "[rdma][unit]") {
    CHECK(rdma_wire::encode_sys_get(0x01020304) == header(16, 0x1406, NLM_F_REQUEST | NLM_F_ACK, 0x01020304));
}

TEST_CASE("SYS_SET carries the mode as a u8 attribute 66, padded", "[rdma][unit]") {
    Bytes expected = header(24, 0x1407, 0x0005, 7);
    for (std::uint8_t b : {0x05, 0x00, 0x42, 0x00, 0x00, 0x00, 0x00, 0x00}) expected.push_back(b);
    CHECK(rdma_wire::encode_sys_set(7, RdmaNetnsMode::exclusive) == expected);
    expected[16 + 4] = 0x01;
    CHECK(rdma_wire::encode_sys_set(7, RdmaNetnsMode::shared) == expected);
}

TEST_CASE("GET is a dump request", "[rdma][unit]") {
    CHECK(rdma_wire::encode_get_dump(9) == header(16, 0x1401, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, 9));
    CHECK((NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP) == 0x305);
}

TEST_CASE("SET move carries DEV_INDEX and NET_NS_FD as u32", "[rdma][unit]") {
    Bytes expected = header(32, 0x1402, 0x0005, 11);
    for (std::uint8_t b : {0x08, 0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00,   // DEV_INDEX = 3
                           0x08, 0x00, 0x44, 0x00, 0x07, 0x00, 0x00, 0x00})  // NET_NS_FD = 7
        expected.push_back(b);
    CHECK(rdma_wire::encode_move(11, 3, 7) == expected);
}

TEST_CASE("SYS_GET replies decode with unknown attributes around the mode", "[rdma][unit]") {
    // nldev_sys_get_doit: NETNS_MODE, then (newer kernels) PRIVILEGED_QKEY_MODE, COPY_ON_FORK.
    Bytes reply;
    attr(reply, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, {0});
    attr(reply, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, {1});
    CHECK(rdma_wire::decode_sys_get_reply(reply.data(), reply.size()) == RdmaNetnsMode::exclusive);
    Bytes shared;
    attr(shared, 200, le32(5));  // a future attribute first
    attr(shared, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, {1});
    CHECK(rdma_wire::decode_sys_get_reply(shared.data(), shared.size()) == RdmaNetnsMode::shared);
}

TEST_CASE("SYS_GET replies without a valid mode are protocol errors", "[rdma][unit]") {
    auto decode_errno = [](const Bytes& b) {
        try {
            rdma_wire::decode_sys_get_reply(b.data(), b.size());
        } catch (const KernelError& e) {
            return e.errno_value();
        }
        return 0;
    };
    CHECK(decode_errno({}) == EPROTO);
    Bytes bad_value;
    attr(bad_value, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, {2});
    CHECK(decode_errno(bad_value) == EPROTO);
    Bytes truncated;
    attr(truncated, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, {0});
    truncated[0] = 40;  // claims more than there is
    CHECK(decode_errno(truncated) == EPROTO);
}

TEST_CASE("GET dump entries decode index and name among the device attributes", "[rdma][unit]") {
    // fill_dev_info: handle (DEV_INDEX, DEV_NAME), PORT_INDEX, CAP_FLAGS (u64 with PAD), FW_VERSION,
    // NODE_GUID, ..., DEV_PROTOCOL.
    Bytes reply;
    attr(reply, RDMA_NLDEV_ATTR_DEV_INDEX, le32(2));
    attr(reply, RDMA_NLDEV_ATTR_DEV_NAME, str("rxe0"));
    attr(reply, RDMA_NLDEV_ATTR_PORT_INDEX, le32(1));
    attr(reply, RDMA_NLDEV_ATTR_PAD, {});
    attr(reply, RDMA_NLDEV_ATTR_CAP_FLAGS, le64(0x1234));
    attr(reply, RDMA_NLDEV_ATTR_FW_VERSION, str("1.0"));
    attr(reply, RDMA_NLDEV_ATTR_NODE_GUID, le64(0x0250b6fffe000001ULL));
    attr(reply, RDMA_NLDEV_ATTR_DEV_PROTOCOL, str("roce"));
    const auto dev = rdma_wire::decode_device(reply.data(), reply.size());
    CHECK(dev.index == 2);
    CHECK(dev.name == "rxe0");

    Bytes nameless;
    attr(nameless, RDMA_NLDEV_ATTR_DEV_INDEX, le32(2));
    CHECK_THROWS_AS(rdma_wire::decode_device(nameless.data(), nameless.size()), KernelError);
}

TEST_CASE("IPoIB RTM_NEWLINK: ifname, link, kind ipoib with pkey/mode/umcast u16", "[ipoib][unit]") {
    IpoibSpec spec;
    spec.name = "rdm0badc0de";
    spec.parent_index = 5;
    spec.pkey = 0x7fff;
    spec.mode = IpoibMode::connected;
    spec.umcast = true;

    Bytes body(sizeof(ifinfomsg), 0);
    attr(body, IFLA_IFNAME, str("rdm0badc0de"));
    attr(body, IFLA_LINK, le32(5));
    Bytes data;
    attr(data, IFLA_IPOIB_PKEY, le16(0x7fff));
    attr(data, IFLA_IPOIB_MODE, le16(IPOIB_MODE_CONNECTED));
    attr(data, IFLA_IPOIB_UMCAST, le16(1));
    Bytes info;
    attr(info, IFLA_INFO_KIND, str("ipoib"));
    attr(info, IFLA_INFO_DATA | NLA_F_NESTED, data);
    attr(body, IFLA_LINKINFO | NLA_F_NESTED, info);
    Bytes expected = header(static_cast<std::uint32_t>(16 + body.size()), RTM_NEWLINK,
                            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, 42);
    expected.insert(expected.end(), body.begin(), body.end());

    const auto encoded = ipoib_wire::encode_newlink(42, spec);
    CHECK(encoded.size() == 100);
    CHECK(encoded == expected);
    // Spot checks of the numbers themselves, so the test does not only mirror the encoder.
    CHECK(encoded[4] == 16);       // RTM_NEWLINK
    CHECK(encoded[6] == 0x05);     // REQUEST|ACK
    CHECK(encoded[7] == 0x06);     // CREATE|EXCL
    CHECK(encoded[32 + 2] == 3);   // IFLA_IFNAME
    CHECK(encoded[48 + 2] == 5);   // IFLA_LINK
    CHECK(encoded[56 + 2] == 18);  // IFLA_LINKINFO
}

TEST_CASE("IPoIB and RDMA mode names round-trip", "[ipoib][rdma][unit]") {
    CHECK(parse_ipoib_mode("connected") == IpoibMode::connected);
    CHECK(parse_ipoib_mode("datagram") == IpoibMode::datagram);
    CHECK_FALSE(parse_ipoib_mode("Datagram"));
    CHECK(parse_rdma_netns_mode("exclusive") == RdmaNetnsMode::exclusive);
    CHECK(parse_rdma_netns_mode("shared") == RdmaNetnsMode::shared);
    CHECK_FALSE(parse_rdma_netns_mode("1"));
    CHECK(rdma_netns_mode_name(RdmaNetnsMode::exclusive) == "exclusive");
}
