// SR-IOV VF attributes over rtnetlink: RTM_SETLINK on the PF with IFLA_VFINFO_LIST →
// IFLA_VF_INFO → one IFLA_VF_* struct, and RTM_GETLINK with RTEXT_FILTER_VF to read them back.
// Payloads are the uapi structs themselves (include/uapi/linux/if_link.h), so their sizes and
// padding are the kernel's.
#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include <cstring>

#include "nl_socket.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/vf.hpp"
#include "rtnl_impl.hpp"

namespace rdmanet::netns {
namespace {

using detail::NlMsgPtr;

constexpr std::uint32_t kNotReported = 0xffffffffu;  // ifla_vf_info's -1: driver did not say

NlMsgPtr link_request(int type, const std::string& pf) {
    ifinfomsg ifi{};
    ifi.ifi_family = AF_UNSPEC;  // ifi_index 0: the kernel looks the PF up by IFLA_IFNAME
    NlMsgPtr msg = detail::new_message(type, 0, &ifi, sizeof ifi);
    if (nla_put_string(msg.get(), IFLA_IFNAME, pf.c_str()) < 0) throw KernelError(EMSGSIZE, "build request for " + pf);
    return msg;
}

template <class T>
void put_struct(nl_msg* msg, int type, const T& value) {
    if (nla_put(msg, type, sizeof value, &value) < 0) throw KernelError(EMSGSIZE, "build VF request");
}

void put_change(nl_msg* msg, const VfChange& c) {
    using F = VfChange::Field;
    switch (c.field) {
    case F::mac: {
        ifla_vf_mac v{};
        v.vf = c.vf;
        auto bytes = detail::parse_mac(c.mac);
        if (!bytes) throw KernelError(EINVAL, "set VF " + std::to_string(c.vf) + " MAC: invalid MAC " + c.mac);
        std::memcpy(v.mac, bytes->data(), bytes->size());
        put_struct(msg, IFLA_VF_MAC, v);
        return;
    }
    case F::vlan: {
        if (c.vlan_proto == kVlanProto8021Q) {
            // The classic attribute: every driver with VLAN support takes it (proto 802.1Q).
            ifla_vf_vlan v{c.vf, c.vlan, c.qos};
            put_struct(msg, IFLA_VF_VLAN, v);
            return;
        }
        // 802.1ad needs the list form, the only one that carries a protocol.
        nlattr* list = nla_nest_start(msg, IFLA_VF_VLAN_LIST);
        if (!list) throw KernelError(EMSGSIZE, "build VF request");
        ifla_vf_vlan_info v{};
        v.vf = c.vf;
        v.vlan = c.vlan;
        v.qos = c.qos;
        v.vlan_proto = htons(c.vlan_proto);
        put_struct(msg, IFLA_VF_VLAN_INFO, v);
        nla_nest_end(msg, list);
        return;
    }
    case F::rate: put_struct(msg, IFLA_VF_RATE, ifla_vf_rate{c.vf, c.min_tx_rate, c.max_tx_rate}); return;
    case F::spoofchk: put_struct(msg, IFLA_VF_SPOOFCHK, ifla_vf_spoofchk{c.vf, c.enabled ? 1u : 0u}); return;
    case F::trust: put_struct(msg, IFLA_VF_TRUST, ifla_vf_trust{c.vf, c.enabled ? 1u : 0u}); return;
    case F::link_state:
        put_struct(msg, IFLA_VF_LINK_STATE, ifla_vf_link_state{c.vf, static_cast<std::uint32_t>(c.link_state)});
        return;
    case F::node_guid:
    case F::port_guid: {
        ifla_vf_guid v{};  // 4 bytes of padding after vf (u64 alignment), zeroed
        v.vf = c.vf;
        v.guid = c.guid;
        put_struct(msg, c.field == F::node_guid ? IFLA_VF_IB_NODE_GUID : IFLA_VF_IB_PORT_GUID, v);
        return;
    }
    }
}

NlMsgPtr build_setlink(const std::string& pf, const VfChange& change) {
    NlMsgPtr msg = link_request(RTM_SETLINK, pf);
    nlattr* list = nla_nest_start(msg.get(), IFLA_VFINFO_LIST);
    nlattr* info = list ? nla_nest_start(msg.get(), IFLA_VF_INFO) : nullptr;
    if (!info) throw KernelError(EMSGSIZE, "build VF request");
    put_change(msg.get(), change);
    nla_nest_end(msg.get(), info);
    nla_nest_end(msg.get(), list);
    return msg;
}

NlMsgPtr build_getlink(const std::string& pf) {
    NlMsgPtr msg = link_request(RTM_GETLINK, pf);
    if (nla_put_u32(msg.get(), IFLA_EXT_MASK, RTEXT_FILTER_VF) < 0)
        throw KernelError(EMSGSIZE, "build request for " + pf);
    return msg;
}

std::vector<std::uint8_t> bytes_of(nl_msg* msg) {
    const nlmsghdr* hdr = nlmsg_hdr(msg);
    const auto* p = reinterpret_cast<const std::uint8_t*>(hdr);
    return {p, p + hdr->nlmsg_len};
}

// The payload of `attr` as T, or EPROTO when the kernel sent fewer bytes than T has.
template <class T>
T payload(const nlattr* attr) {
    if (nla_len(attr) < static_cast<int>(sizeof(T)))
        throw KernelError(EPROTO, "VF attribute " + std::to_string(nla_type(attr)) + " too short");
    T value;
    std::memcpy(&value, nla_data(attr), sizeof value);
    return value;
}

std::optional<bool> setting(std::uint32_t value) {
    if (value == kNotReported) return std::nullopt;
    return value != 0;
}

VfInfo decode_vf(nlattr* vf_info) {
    nlattr* tb[IFLA_VF_MAX + 1] = {};
    if (nla_parse_nested(tb, IFLA_VF_MAX, vf_info, nullptr) < 0) throw KernelError(EPROTO, "malformed IFLA_VF_INFO");
    if (!tb[IFLA_VF_MAC]) throw KernelError(EPROTO, "IFLA_VF_INFO without IFLA_VF_MAC");
    VfInfo vf;
    const auto mac = payload<ifla_vf_mac>(tb[IFLA_VF_MAC]);
    vf.index = mac.vf;
    vf.mac = detail::format_hwaddr(mac.mac, 6);
    if (tb[IFLA_VF_VLAN]) {
        const auto v = payload<ifla_vf_vlan>(tb[IFLA_VF_VLAN]);
        vf.vlan = v.vlan;
        vf.qos = v.qos;
    }
    if (tb[IFLA_VF_VLAN_LIST]) {
        nlattr* entry;
        int rem;
        nla_for_each_nested(entry, tb[IFLA_VF_VLAN_LIST], rem) {
            if (nla_type(entry) != IFLA_VF_VLAN_INFO) continue;
            const auto v = payload<ifla_vf_vlan_info>(entry);
            vf.vlan_proto = ntohs(v.vlan_proto);
            break;  // MAX_VLAN_LIST_LEN is 1
        }
    }
    if (tb[IFLA_VF_RATE]) {
        const auto r = payload<ifla_vf_rate>(tb[IFLA_VF_RATE]);
        vf.min_tx_rate = r.min_tx_rate;
        vf.max_tx_rate = r.max_tx_rate;
    } else if (tb[IFLA_VF_TX_RATE]) {
        vf.max_tx_rate = payload<ifla_vf_tx_rate>(tb[IFLA_VF_TX_RATE]).rate;
    }
    if (tb[IFLA_VF_SPOOFCHK]) vf.spoofchk = setting(payload<ifla_vf_spoofchk>(tb[IFLA_VF_SPOOFCHK]).setting);
    if (tb[IFLA_VF_TRUST]) vf.trust = setting(payload<ifla_vf_trust>(tb[IFLA_VF_TRUST]).setting);
    if (tb[IFLA_VF_LINK_STATE])
        vf.link_state = static_cast<VfLinkState>(payload<ifla_vf_link_state>(tb[IFLA_VF_LINK_STATE]).link_state);
    if (tb[IFLA_VF_IB_NODE_GUID]) vf.node_guid = payload<ifla_vf_guid>(tb[IFLA_VF_IB_NODE_GUID]).guid;
    if (tb[IFLA_VF_IB_PORT_GUID]) vf.port_guid = payload<ifla_vf_guid>(tb[IFLA_VF_IB_PORT_GUID]).guid;
    return vf;
}

class NetlinkVfControl final : public VfControl {
public:
    std::vector<VfInfo> list(const std::string& pf) override {
        NlMsgPtr msg = build_getlink(pf);
        std::vector<VfInfo> vfs;
        detail::throw_if_error(sock_.transact(msg.get(),
                                              [&](nl_msg* reply) {
                                                  const nlmsghdr* hdr = nlmsg_hdr(reply);
                                                  if (hdr->nlmsg_type != RTM_NEWLINK) return;
                                                  vfs = vf_wire::decode_newlink(
                                                      reinterpret_cast<const std::uint8_t*>(hdr), hdr->nlmsg_len);
                                              }),
                               "read VFs of " + pf);
        return vfs;
    }

    void apply(const std::string& pf, const VfChange& change) override {
        NlMsgPtr msg = build_setlink(pf, change);
        detail::throw_if_error(sock_.transact(msg.get()),
                               "set VF " + std::to_string(change.vf) + " " + change.describe() + " on " + pf);
    }

private:
    detail::NlSocket sock_{NETLINK_ROUTE};
};

}  // namespace

VfInfo VfControl::get(const std::string& pf, unsigned vf) {
    for (auto& info : list(pf))
        if (info.index == vf) return info;
    throw KernelError(ENOENT, pf + " reports no VF " + std::to_string(vf));
}

std::unique_ptr<VfControl> make_netlink_vf_control() { return std::make_unique<NetlinkVfControl>(); }

namespace vf_wire {

std::vector<std::uint8_t> setlink_request(const std::string& pf, const VfChange& change) {
    return bytes_of(build_setlink(pf, change).get());
}

std::vector<std::uint8_t> getlink_request(const std::string& pf) { return bytes_of(build_getlink(pf).get()); }

std::vector<VfInfo> decode_newlink(const std::uint8_t* msg, std::size_t len) {
    if (len < NLMSG_HDRLEN + sizeof(ifinfomsg)) throw KernelError(EPROTO, "RTM_NEWLINK too short");
    // libnl's accessors take non-const pointers; the buffer is only read. Copy to get alignment.
    std::vector<std::uint8_t> copy(msg, msg + len);
    auto* hdr = reinterpret_cast<nlmsghdr*>(copy.data());
    if (hdr->nlmsg_len > len || hdr->nlmsg_len < NLMSG_HDRLEN + sizeof(ifinfomsg))
        throw KernelError(EPROTO, "RTM_NEWLINK length mismatch");
    nlattr* list = nlmsg_find_attr(hdr, sizeof(ifinfomsg), IFLA_VFINFO_LIST);
    std::vector<VfInfo> vfs;
    if (!list) return vfs;  // no SR-IOV on this link
    nlattr* info;
    int rem;
    nla_for_each_nested(info, list, rem) {
        if (nla_type(info) != IFLA_VF_INFO) continue;
        vfs.push_back(decode_vf(info));
    }
    return vfs;
}

}  // namespace vf_wire

}  // namespace rdmanet::netns
