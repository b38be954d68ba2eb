// RDMA netlink (nldev) over a raw NETLINK_RDMA socket: encoding, decoding and the kernel
// implementation of RdmaNetlink (include/uapi/rdma/rdma_netlink.h; the messages are those
// iproute2's `rdma` sends, listed in docs/architecture.md).
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <cstring>

#include "raw_netlink.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/rdma.hpp"

namespace rdmanet::netns {

// The wire constants are spelled out in rdma.hpp so tests and readers see the numbers; they must
// be the uapi's.
static_assert(rdma_wire::kNetlinkRdma == NETLINK_RDMA);
static_assert(rdma_wire::kClientNldev == RDMA_NL_NLDEV);
static_assert(rdma_wire::type_of(rdma_wire::kCmdGet) == RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET));
static_assert(rdma_wire::kCmdGet == RDMA_NLDEV_CMD_GET && rdma_wire::kCmdSet == RDMA_NLDEV_CMD_SET);
static_assert(rdma_wire::kCmdSysGet == RDMA_NLDEV_CMD_SYS_GET && rdma_wire::kCmdSysSet == RDMA_NLDEV_CMD_SYS_SET);
static_assert(rdma_wire::kAttrDevIndex == RDMA_NLDEV_ATTR_DEV_INDEX);
static_assert(rdma_wire::kAttrDevName == RDMA_NLDEV_ATTR_DEV_NAME);
static_assert(rdma_wire::kAttrNetnsMode == RDMA_NLDEV_SYS_ATTR_NETNS_MODE);
static_assert(rdma_wire::kAttrNetNsFd == RDMA_NLDEV_NET_NS_FD);

std::string_view rdma_netns_mode_name(RdmaNetnsMode mode) {
    return mode == RdmaNetnsMode::exclusive ? "exclusive" : "shared";
}

std::optional<RdmaNetnsMode> parse_rdma_netns_mode(std::string_view name) {
    if (name == "exclusive") return RdmaNetnsMode::exclusive;
    if (name == "shared") return RdmaNetnsMode::shared;
    return std::nullopt;
}

std::optional<RdmaDeviceInfo> RdmaNetlink::device_by_name(const std::string& name) {
    for (auto& device : devices())
        if (device.name == name) return device;
    return std::nullopt;
}

namespace rdma_wire {

namespace {
constexpr std::uint16_t kRequestAck = NLM_F_REQUEST | NLM_F_ACK;
}

std::vector<std::uint8_t> encode_sys_get(std::uint32_t seq) {
    return detail::NlWriter(type_of(kCmdSysGet), kRequestAck, seq).finish();
}

std::vector<std::uint8_t> encode_sys_set(std::uint32_t seq, RdmaNetnsMode mode) {
    detail::NlWriter w(type_of(kCmdSysSet), kRequestAck, seq);
    w.put_u8(kAttrNetnsMode, static_cast<std::uint8_t>(mode));
    return w.finish();
}

std::vector<std::uint8_t> encode_get_dump(std::uint32_t seq) {
    return detail::NlWriter(type_of(kCmdGet), kRequestAck | NLM_F_DUMP, seq).finish();
}

std::vector<std::uint8_t> encode_move(std::uint32_t seq, std::uint32_t index, std::uint32_t netns_fd) {
    detail::NlWriter w(type_of(kCmdSet), kRequestAck, seq);
    w.put_u32(kAttrDevIndex, index);
    w.put_u32(kAttrNetNsFd, netns_fd);
    return w.finish();
}

std::vector<std::uint8_t> encode_rename(std::uint32_t seq, std::uint32_t index, const std::string& name) {
    detail::NlWriter w(type_of(kCmdSet), kRequestAck, seq);
    w.put_u32(kAttrDevIndex, index);
    w.put_string(kAttrDevName, name);
    return w.finish();
}

RdmaNetnsMode decode_sys_get_reply(const std::uint8_t* attrs, std::size_t len) {
    std::optional<std::uint8_t> mode;
    const bool well_formed =
        detail::for_each_attr(attrs, len, [&](std::uint16_t type, const std::uint8_t* d, std::size_t l) {
            if (type == kAttrNetnsMode && l >= 1) mode = d[0];
        });
    if (!well_formed || !mode || *mode > 1)
        throw KernelError(EPROTO, "RDMA netlink SYS_GET reply without a valid netns mode");
    return static_cast<RdmaNetnsMode>(*mode);
}

RdmaDeviceInfo decode_device(const std::uint8_t* attrs, std::size_t len) {
    std::optional<std::uint32_t> index;
    std::optional<std::string> name;
    const bool well_formed =
        detail::for_each_attr(attrs, len, [&](std::uint16_t type, const std::uint8_t* d, std::size_t l) {
            if (type == kAttrDevIndex && l == 4) {
                std::uint32_t v = 0;
                std::memcpy(&v, d, 4);
                index = v;
            } else if (type == kAttrDevName && l > 0) {
                name.emplace(reinterpret_cast<const char*>(d), strnlen(reinterpret_cast<const char*>(d), l));
            }
        });
    if (!well_formed || !index || !name || name->empty())
        throw KernelError(EPROTO, "RDMA netlink device reply without index and name");
    return RdmaDeviceInfo{*index, *name};
}

}  // namespace rdma_wire

namespace {

// One socket per object, in the namespace it was created in.
class KernelRdmaNetlink final : public RdmaNetlink {
public:
    KernelRdmaNetlink() : sock_(rdma_wire::kNetlinkRdma) {}

    RdmaNetnsMode netns_mode() override {
        const auto seq = sock_.next_seq();
        std::vector<std::vector<std::uint8_t>> replies;
        detail::throw_if_failed(sock_.transact(rdma_wire::encode_sys_get(seq), seq, collect(replies)),
                                "read the RDMA netns mode (RDMA netlink SYS_GET)");
        if (replies.empty()) throw KernelError(EPROTO, "RDMA netlink SYS_GET: no reply");
        return rdma_wire::decode_sys_get_reply(replies.front().data(), replies.front().size());
    }

    void set_netns_mode(RdmaNetnsMode mode) override {
        const auto seq = sock_.next_seq();
        detail::throw_if_failed(
            sock_.transact(rdma_wire::encode_sys_set(seq, mode), seq),
            "set the RDMA netns mode to " + std::string(rdma_netns_mode_name(mode)) + " (RDMA netlink SYS_SET)");
    }

    std::vector<RdmaDeviceInfo> devices() override {
        const auto seq = sock_.next_seq();
        std::vector<std::vector<std::uint8_t>> replies;
        detail::throw_if_failed(sock_.transact(rdma_wire::encode_get_dump(seq), seq, collect(replies)),
                                "list RDMA devices (RDMA netlink GET)");
        std::vector<RdmaDeviceInfo> out;
        for (const auto& reply : replies) out.push_back(rdma_wire::decode_device(reply.data(), reply.size()));
        return out;
    }

    void move_device(std::uint32_t index, int netns_fd) override {
        const auto seq = sock_.next_seq();
        detail::throw_if_failed(
            sock_.transact(rdma_wire::encode_move(seq, index, static_cast<std::uint32_t>(netns_fd)), seq),
            "move RDMA device #" + std::to_string(index) + " to another network namespace (RDMA netlink SET)");
    }

    void rename_device(std::uint32_t index, const std::string& name) override {
        const auto seq = sock_.next_seq();
        detail::throw_if_failed(sock_.transact(rdma_wire::encode_rename(seq, index, name), seq),
                                "rename RDMA device #" + std::to_string(index) + " to " + name + " (RDMA netlink SET)");
    }

private:
    // Replies are decoded after the answer has been read completely, so that a malformed one
    // never leaves the rest of the answer in the socket.
    static detail::RawNetlinkSocket::ReplyFn collect(std::vector<std::vector<std::uint8_t>>& into) {
        return [&into](std::uint16_t, const std::uint8_t* payload, std::size_t len) {
            into.emplace_back(payload, payload + len);
        };
    }

    detail::RawNetlinkSocket sock_;
};

}  // namespace

std::unique_ptr<RdmaNetlink> open_rdma_netlink() { return std::make_unique<KernelRdmaNetlink>(); }

}  // namespace rdmanet::netns
