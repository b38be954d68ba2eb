#pragma once
// Internal to netns/: netlink messages built byte by byte close to the kernel uapi (for the
// families libnl-3.7 does not know: NETLINK_RDMA nldev, IPoIB link data), and a raw socket that
// sends one request and reads its whole answer with the kernel's errno intact.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/base/fd.hpp"

namespace rdmanet::netns::detail {

// Appends a netlink message: nlmsghdr, an optional family header, then attributes (each padded
// to 4 bytes, as NLA_ALIGN). finish() writes the total length into nlmsg_len.
class NlWriter {
public:
    NlWriter(std::uint16_t type, std::uint16_t flags, std::uint32_t seq);
    void header(const void* data, std::size_t len);  // family header, right after nlmsghdr
    void put(std::uint16_t type, const void* data, std::size_t len);
    void put_u8(std::uint16_t type, std::uint8_t v) { put(type, &v, 1); }
    void put_u16(std::uint16_t type, std::uint16_t v) { put(type, &v, 2); }
    void put_u32(std::uint16_t type, std::uint32_t v) { put(type, &v, 4); }
    void put_string(std::uint16_t type, std::string_view s);  // NUL-terminated
    // Nested attribute: begin returns a handle for end, which fixes its length.
    std::size_t begin_nest(std::uint16_t type);
    void end_nest(std::size_t handle);
    std::vector<std::uint8_t> finish();

private:
    std::vector<std::uint8_t> buf_;
};

// Calls fn(type, payload, payload_len) for every attribute in [data, data+len), type masked with
// NLA_TYPE_MASK. Stops at the first malformed attribute (returns false then).
bool for_each_attr(const std::uint8_t* data, std::size_t len,
                   const std::function<void(std::uint16_t, const std::uint8_t*, std::size_t)>& fn);

struct RawOutcome {
    int error = 0;        // positive errno, 0 on success
    std::string ext_ack;  // NLMSGERR_ATTR_MSG when the kernel sent one
};

class RawNetlinkSocket {
public:
    // socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, protocol) in the calling thread's netns, with
    // extended acks requested. Throws KernelError (EPROTONOSUPPORT: the kernel lacks the family).
    explicit RawNetlinkSocket(int protocol);

    std::uint32_t next_seq() { return ++seq_; }
    // Sends `request` (whose nlmsg_seq must be `seq`) and reads until the ACK/error (or
    // NLMSG_DONE for dumps); every other message with this seq goes to on_reply(type, payload,
    // payload_len), payload being what follows the nlmsghdr. Other seqs are skipped.
    // Bounded: a kernel that never answers within 5 s gives ETIMEDOUT.
    using ReplyFn = std::function<void(std::uint16_t, const std::uint8_t*, std::size_t)>;
    RawOutcome transact(const std::vector<std::uint8_t>& request, std::uint32_t seq, const ReplyFn& on_reply = {});

private:
    base::UniqueFd fd_;
    std::uint32_t seq_;
};

// KernelError(outcome.error, what [+ ": " + kernel message]) when it is an error.
void throw_if_failed(const RawOutcome& outcome, const std::string& what);

}  // namespace rdmanet::netns::detail
