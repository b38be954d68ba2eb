#pragma once
// IPoIB child links: RTM_NEWLINK of kind "ipoib" on an InfiniBand parent,
// with IFLA_INFO_DATA carrying IFLA_IPOIB_PKEY / _MODE / _UMCAST (u16 each). Behind a narrow
// interface because the development kernel has no IPoIB: tests use a stand-in that creates a
// macvlan on a veth, so the move/rename/delete path around it still runs on the real kernel.
// libnl-route 3.7 has no IPoIB support, so the message is built here by hand.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::netns {

// Kernel values of IFLA_IPOIB_MODE.
enum class IpoibMode : std::uint16_t { datagram = 0, connected = 1 };
std::string_view ipoib_mode_name(IpoibMode mode);  // "datagram" | "connected"
std::optional<IpoibMode> parse_ipoib_mode(std::string_view name);

struct IpoibSpec {
    std::string name;        // created under this (temporary) name in the socket's netns
    int parent_index = 0;    // IFLA_LINK: ifindex of the InfiniBand parent
    std::uint16_t pkey = 0;  // IFLA_IPOIB_PKEY; the kernel sets the full-membership bit
    IpoibMode mode = IpoibMode::datagram;
    bool umcast = true;  // IFLA_IPOIB_UMCAST (ipoib-cni sets it)
};

class IpoibLinks {
public:
    virtual ~IpoibLinks() = default;
    // Creates the child in the namespace the implementation was opened in. KernelError with the
    // kernel's errno (EINVAL for pkey 0/0x8000, EEXIST for a pkey already used on the parent
    // or a taken name, ENODEV for a missing parent, EOPNOTSUPP for a non-IPoIB parent).
    virtual void create(const IpoibSpec& spec) = 0;
    // IFLA_INFO_KIND of the links create() makes ("ipoib" for the kernel).
    virtual std::string kind() const = 0;
};

// rtnetlink in the calling thread's netns.
std::unique_ptr<IpoibLinks> open_ipoib_links();

// The parent as ipoib exposes it in sysfs: class/net/<if>/{type,pkey,mode}.
struct IpoibParentInfo {
    unsigned type = 0;                  // ARPHRD_*; 32 = ARPHRD_INFINIBAND
    std::optional<std::uint16_t> pkey;  // "0xffff"
    std::optional<IpoibMode> mode;      // "datagram" | "connected"
    bool is_infiniband() const { return type == 32; }
};
// nullopt when class/net/<ifname> does not exist (or the name is unsafe).
std::optional<IpoibParentInfo> read_ipoib_parent(const Sysfs& sysfs, const std::string& ifname);

namespace ipoib_wire {
// RTM_NEWLINK, NLM_F_REQUEST|NLM_F_ACK|NLM_F_CREATE|NLM_F_EXCL, ifinfomsg zeroed, then
// IFLA_IFNAME, IFLA_LINK, IFLA_LINKINFO{IFLA_INFO_KIND "ipoib", IFLA_INFO_DATA{PKEY, MODE, UMCAST}}.
std::vector<std::uint8_t> encode_newlink(std::uint32_t seq, const IpoibSpec& spec);
}  // namespace ipoib_wire

}  // namespace rdmanet::netns
