#pragma once
// RDMA netlink (NETLINK_RDMA, the "nldev" client): the system's RDMA network-namespace mode, the
// RDMA devices visible in a namespace and moving one into another namespace (the kernel's rules
// are in docs/architecture.md). Behind a narrow virtual interface because the development kernel has
// no RDMA: tests use a fake that models the kernel's semantics, and the same scenarios
// (tests/support/rdma_scenarios.hpp) run against both the fake and a real kernel (the lab).
//
// Like rtnetlink, an RDMA netlink socket is bound to the namespace it was opened in: in exclusive
// mode it sees and addresses only the devices of that namespace, so a device inside a pod is
// moved back from a socket opened inside the pod's namespace.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rdmanet::netns {

// Kernel values of RDMA_NLDEV_SYS_ATTR_NETNS_MODE.
enum class RdmaNetnsMode : std::uint8_t { exclusive = 0, shared = 1 };
std::string_view rdma_netns_mode_name(RdmaNetnsMode mode);  // "exclusive" | "shared"
std::optional<RdmaNetnsMode> parse_rdma_netns_mode(std::string_view name);

struct RdmaDeviceInfo {
    std::uint32_t index = 0;  // RDMA_NLDEV_ATTR_DEV_INDEX (not an ifindex)
    std::string name;         // RDMA_NLDEV_ATTR_DEV_NAME, e.g. "mlx5_3", "rxe0"
    friend bool operator==(const RdmaDeviceInfo&, const RdmaDeviceInfo&) = default;
};

// Every failure throws KernelError carrying the kernel's errno:
//   netns_mode():      EINVAL/EOPNOTSUPP on kernels without RDMA netns support;
//   set_netns_mode():  EBUSY while any network namespace other than the initial one exists
//                      (setting the current mode is a no-op and succeeds), EPERM without
//                      CAP_NET_ADMIN;
//   move_device():     EOPNOTSUPP in shared mode or when the driver cannot disassociate (rxe),
//                      EINVAL for an index this namespace does not see, EPERM without
//                      CAP_NET_ADMIN over the target;
//   rename_device():   EEXIST when another RDMA device already has the name (the kernel's
//                      check, ib_device_rename, looks at every device of the node, whatever
//                      namespace holds it), EINVAL for an empty name or an index this namespace
//                      does not see; renaming to the current name is a no-op.
class RdmaNetlink {
public:
    virtual ~RdmaNetlink() = default;
    virtual RdmaNetnsMode netns_mode() = 0;                                        // SYS_GET
    virtual void set_netns_mode(RdmaNetnsMode mode) = 0;                           // SYS_SET
    virtual std::vector<RdmaDeviceInfo> devices() = 0;                             // GET, dump
    virtual void move_device(std::uint32_t index, int netns_fd) = 0;               // SET + NET_NS_FD
    virtual void rename_device(std::uint32_t index, const std::string& name) = 0;  // SET + DEV_NAME

    // Name -> index through devices(); nullopt when this namespace does not see it.
    std::optional<RdmaDeviceInfo> device_by_name(const std::string& name);
};

// Opens RDMA netlink in the calling thread's network namespace. KernelError EPROTONOSUPPORT
// when the kernel has no RDMA netlink (ib_core not loaded or not built).
std::unique_ptr<RdmaNetlink> open_rdma_netlink();

// Wire format, exposed for byte-for-byte tests. Requests carry NLM_F_REQUEST|NLM_F_ACK (GET also
// NLM_F_DUMP), nlmsg_pid 0, the given sequence number, no family header (nldev has none).
namespace rdma_wire {

constexpr int kNetlinkRdma = 20;           // NETLINK_RDMA
constexpr std::uint16_t kClientNldev = 5;  // RDMA_NL_NLDEV
constexpr std::uint16_t type_of(std::uint16_t op) { return static_cast<std::uint16_t>((kClientNldev << 10) + op); }
constexpr std::uint16_t kCmdGet = 1, kCmdSet = 2, kCmdSysGet = 6, kCmdSysSet = 7;
constexpr std::uint16_t kAttrDevIndex = 1, kAttrDevName = 2, kAttrNetnsMode = 66, kAttrNetNsFd = 68;

std::vector<std::uint8_t> encode_sys_get(std::uint32_t seq);
std::vector<std::uint8_t> encode_sys_set(std::uint32_t seq, RdmaNetnsMode mode);
std::vector<std::uint8_t> encode_get_dump(std::uint32_t seq);
std::vector<std::uint8_t> encode_move(std::uint32_t seq, std::uint32_t index, std::uint32_t netns_fd);
// `rdma dev set <dev> name <new>`: DEV_INDEX + DEV_NAME (NUL-terminated).
std::vector<std::uint8_t> encode_rename(std::uint32_t seq, std::uint32_t index, const std::string& name);

// Decoders for the payload of one reply message (attributes after the nlmsghdr). They ignore
// attributes they do not know (kernels add new ones) and throw KernelError(EPROTO) when the
// attribute they need is missing or malformed.
RdmaNetnsMode decode_sys_get_reply(const std::uint8_t* attrs, std::size_t len);
RdmaDeviceInfo decode_device(const std::uint8_t* attrs, std::size_t len);

}  // namespace rdma_wire

}  // namespace rdmanet::netns
