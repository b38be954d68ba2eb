// Hand-built netlink messages and a raw request/answer socket (see raw_netlink.hpp).
#include "raw_netlink.hpp"

#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "rdmanet/netns/error.hpp"

namespace rdmanet::netns::detail {

namespace {

constexpr std::size_t align4(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

void write_u16(std::vector<std::uint8_t>& buf, std::size_t at, std::uint16_t v) { std::memcpy(buf.data() + at, &v, 2); }

long long now_ms() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

constexpr int kAnswerTimeoutMs = 5000;

}  // namespace

NlWriter::NlWriter(std::uint16_t type, std::uint16_t flags, std::uint32_t seq) {
    nlmsghdr h{};
    h.nlmsg_type = type;
    h.nlmsg_flags = flags;
    h.nlmsg_seq = seq;
    buf_.resize(NLMSG_HDRLEN);
    std::memcpy(buf_.data(), &h, sizeof h);
}

void NlWriter::header(const void* data, std::size_t len) {
    const std::size_t at = buf_.size();
    buf_.resize(at + align4(len), 0);
    std::memcpy(buf_.data() + at, data, len);
}

void NlWriter::put(std::uint16_t type, const void* data, std::size_t len) {
    const std::size_t at = buf_.size();
    buf_.resize(at + align4(NLA_HDRLEN + len), 0);
    write_u16(buf_, at, static_cast<std::uint16_t>(NLA_HDRLEN + len));
    write_u16(buf_, at + 2, type);
    if (len) std::memcpy(buf_.data() + at + NLA_HDRLEN, data, len);
}

void NlWriter::put_string(std::uint16_t type, std::string_view s) {
    std::vector<char> z(s.begin(), s.end());
    z.push_back('\0');
    put(type, z.data(), z.size());
}

std::size_t NlWriter::begin_nest(std::uint16_t type) {
    const std::size_t at = buf_.size();
    buf_.resize(at + NLA_HDRLEN, 0);
    write_u16(buf_, at + 2, static_cast<std::uint16_t>(type | NLA_F_NESTED));
    return at;
}

void NlWriter::end_nest(std::size_t handle) {
    write_u16(buf_, handle, static_cast<std::uint16_t>(buf_.size() - handle));
}

std::vector<std::uint8_t> NlWriter::finish() {
    const auto len = static_cast<std::uint32_t>(buf_.size());
    std::memcpy(buf_.data(), &len, 4);
    return buf_;
}

bool for_each_attr(const std::uint8_t* data, std::size_t len,
                   const std::function<void(std::uint16_t, const std::uint8_t*, std::size_t)>& fn) {
    std::size_t off = 0;
    while (off + NLA_HDRLEN <= len) {
        std::uint16_t alen = 0, type = 0;
        std::memcpy(&alen, data + off, 2);
        std::memcpy(&type, data + off + 2, 2);
        if (alen < NLA_HDRLEN || off + alen > len) return false;
        fn(static_cast<std::uint16_t>(type & NLA_TYPE_MASK), data + off + NLA_HDRLEN, alen - NLA_HDRLEN);
        off += align4(alen);
    }
    return off >= len;
}

RawNetlinkSocket::RawNetlinkSocket(int protocol) : seq_(static_cast<std::uint32_t>(now_ms())) {
    fd_.reset(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol));
    if (!fd_) throw KernelError(errno, "open netlink socket (protocol " + std::to_string(protocol) + ")");
    sockaddr_nl local{};
    local.nl_family = AF_NETLINK;
    if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) < 0)
        throw KernelError(errno, "bind netlink socket");
    const int one = 1;
    // Best effort: older kernels simply do not send the text.
    ::setsockopt(fd_.get(), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
}

RawOutcome RawNetlinkSocket::transact(const std::vector<std::uint8_t>& request, std::uint32_t seq,
                                      const ReplyFn& on_reply) {
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd_.get(), request.data(), request.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
        return {errno, {}};

    std::vector<std::uint8_t> buf(64 * 1024);
    const long long deadline = now_ms() + kAnswerTimeoutMs;
    for (;;) {
        pollfd p{fd_.get(), POLLIN, 0};
        const long long left = deadline - now_ms();
        const int ready = left > 0 ? ::poll(&p, 1, static_cast<int>(left)) : 0;
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return {ready == 0 ? ETIMEDOUT : errno, {}};
        // MSG_TRUNC reports the real size: grow and drop nothing (a dump page can exceed 64 KiB).
        const ssize_t peek = ::recv(fd_.get(), buf.data(), 0, MSG_PEEK | MSG_TRUNC);
        if (peek > static_cast<ssize_t>(buf.size())) buf.resize(static_cast<std::size_t>(peek));
        const ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return {errno, {}};
        }
        std::size_t off = 0;
        const auto total = static_cast<std::size_t>(n);
        while (off + NLMSG_HDRLEN <= total) {
            nlmsghdr h{};
            std::memcpy(&h, buf.data() + off, sizeof h);
            if (h.nlmsg_len < NLMSG_HDRLEN || off + h.nlmsg_len > total) return {EPROTO, {}};
            const std::uint8_t* payload = buf.data() + off + NLMSG_HDRLEN;
            const std::size_t plen = h.nlmsg_len - NLMSG_HDRLEN;
            off += NLMSG_ALIGN(h.nlmsg_len);
            if (h.nlmsg_seq != seq) continue;  // left over from an abandoned request
            if (h.nlmsg_type == NLMSG_DONE) return {};
            if (h.nlmsg_type == NLMSG_ERROR) {
                nlmsgerr err{};
                if (plen < sizeof err) return {EPROTO, {}};
                std::memcpy(&err, payload, sizeof err);
                RawOutcome outcome{-err.error, {}};
                // Extended ack TLVs follow the echoed request (its header only when capped).
                if (h.nlmsg_flags & NLM_F_ACK_TLVS) {
                    std::size_t skip = sizeof err;
                    if (!(h.nlmsg_flags & NLM_F_CAPPED)) skip += err.msg.nlmsg_len - NLMSG_HDRLEN;
                    if (skip < plen)
                        for_each_attr(payload + skip, plen - skip,
                                      [&](std::uint16_t type, const std::uint8_t* d, std::size_t l) {
                                          if (type == NLMSGERR_ATTR_MSG && l > 0)
                                              outcome.ext_ack.assign(reinterpret_cast<const char*>(d),
                                                                     strnlen(reinterpret_cast<const char*>(d), l));
                                      });
                }
                return outcome;
            }
            if (on_reply) on_reply(h.nlmsg_type, payload, plen);
        }
    }
}

void throw_if_failed(const RawOutcome& outcome, const std::string& what) {
    if (!outcome.error) return;
    throw KernelError(outcome.error, outcome.ext_ack.empty() ? what : what + ": " + outcome.ext_ack);
}

}  // namespace rdmanet::netns::detail
