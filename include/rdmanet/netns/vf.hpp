#pragma once
// PF-side control of SR-IOV virtual functions: the VF attributes a PF driver keeps per VF (admin
// MAC, VLAN, rates, spoof check, trust, link state, InfiniBand GUIDs), read with RTM_GETLINK
// (IFLA_EXT_MASK = RTEXT_FILTER_VF) and written with RTM_SETLINK carrying IFLA_VFINFO_LIST.
//
// A narrow interface on purpose: this development kernel has no SR-IOV, so the plugin's VF logic
// runs against a recording fake in tests, and only this class talks to the real kernel. The wire
// format is exposed (vf_wire) so that tests can compare it byte for byte with the kernel's uapi
// layouts (include/uapi/linux/if_link.h).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rdmanet::netns {

// Values of IFLA_VF_LINK_STATE.
enum class VfLinkState : std::uint32_t { auto_ = 0, enable = 1, disable = 2 };

inline constexpr std::uint16_t kVlanProto8021Q = 0x8100;
inline constexpr std::uint16_t kVlanProto8021AD = 0x88a8;

// One VF as its PF reports it.
struct VfInfo {
    unsigned index = 0;
    std::string mac = "00:00:00:00:00:00";  // admin MAC, lower-case (first 6 bytes of the 32)
    unsigned vlan = 0;
    unsigned qos = 0;
    std::uint16_t vlan_proto = kVlanProto8021Q;  // host byte order
    unsigned min_tx_rate = 0;                    // Mbps, 0 = no limit
    unsigned max_tx_rate = 0;
    std::optional<bool> spoofchk;  // nullopt: the driver does not report it
    std::optional<bool> trust;
    VfLinkState link_state = VfLinkState::auto_;
    std::optional<std::uint64_t> node_guid;  // InfiniBand VFs (kernel >= 5.x drivers)
    std::optional<std::uint64_t> port_guid;
    friend bool operator==(const VfInfo&, const VfInfo&) = default;
};

// One attribute change on one VF: exactly one RTM_SETLINK.
struct VfChange {
    enum class Field { mac, vlan, rate, spoofchk, trust, link_state, node_guid, port_guid };
    Field field = Field::mac;
    unsigned vf = 0;
    std::string mac;             // Field::mac (six octets)
    unsigned vlan = 0, qos = 0;  // Field::vlan
    std::uint16_t vlan_proto = kVlanProto8021Q;
    unsigned min_tx_rate = 0, max_tx_rate = 0;  // Field::rate
    bool enabled = false;                       // spoofchk, trust
    VfLinkState link_state = VfLinkState::auto_;
    std::uint64_t guid = 0;  // node_guid, port_guid

    static VfChange set_mac(unsigned vf, std::string mac);
    static VfChange set_vlan(unsigned vf, unsigned vlan, unsigned qos, std::uint16_t proto);
    static VfChange set_rate(unsigned vf, unsigned min_tx_rate, unsigned max_tx_rate);
    static VfChange set_spoofchk(unsigned vf, bool on);
    static VfChange set_trust(unsigned vf, bool on);
    static VfChange set_link_state(unsigned vf, VfLinkState state);
    static VfChange set_node_guid(unsigned vf, std::uint64_t guid);
    static VfChange set_port_guid(unsigned vf, std::uint64_t guid);
    // "mac 0a:..", "vlan 100 qos 3 proto 0x8100" ... for logs and error messages.
    std::string describe() const;
    friend bool operator==(const VfChange&, const VfChange&) = default;
};

class VfControl {
public:
    virtual ~VfControl() = default;
    // Every VF of the PF netdev `pf` (in the netns the implementation was created in).
    // KernelError(ENODEV) when the PF does not exist.
    virtual std::vector<VfInfo> list(const std::string& pf) = 0;
    // Throws KernelError with the kernel's errno when the PF or driver refuses.
    virtual void apply(const std::string& pf, const VfChange& change) = 0;

    // The VF `vf` from list(); KernelError(ENOENT) when the PF has no such VF.
    VfInfo get(const std::string& pf, unsigned vf);
};

// rtnetlink implementation; its socket is bound to the calling thread's netns (the host).
std::unique_ptr<VfControl> make_netlink_vf_control();

// "xx:xx:xx:xx:xx:xx:xx:xx" <-> the u64 the kernel takes (the 8 bytes read big-endian).
std::optional<std::uint64_t> parse_guid(const std::string& text);
std::string format_guid(std::uint64_t guid);

namespace vf_wire {
// Complete requests as sent (nlmsghdr with seq 0 and pid 0; NlSocket fills them in), addressing
// the PF by IFLA_IFNAME with ifi_index 0 so no ifindex lookup can race a rename.
std::vector<std::uint8_t> setlink_request(const std::string& pf, const VfChange& change);
std::vector<std::uint8_t> getlink_request(const std::string& pf);
// Decodes one RTM_NEWLINK message (header included), e.g. the reply to getlink_request.
// Unknown attributes are skipped; malformed ones throw KernelError(EPROTO).
std::vector<VfInfo> decode_newlink(const std::uint8_t* msg, std::size_t len);
}  // namespace vf_wire

}  // namespace rdmanet::netns
