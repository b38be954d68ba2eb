#include "nl_socket.hpp"

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include "rdmanet/netns/error.hpp"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270  // include/linux/socket.h; glibc only exposes it with _GNU_SOURCE
#endif

namespace rdmanet::netns::detail {
namespace {

// State of one request while libnl's receive loop calls back into us. Callbacks are C: they
// must never let an exception escape, so on_reply's exceptions are parked here.
struct Exchange {
    std::uint32_t seq = 0;
    bool done = false;
    NlOutcome outcome;
    const NlSocket::ReplyFn* on_reply = nullptr;
    std::exception_ptr failure;
};

Exchange& exchange(void* arg) { return *static_cast<Exchange*>(arg); }

int on_seq_check(nl_msg* msg, void* arg) { return nlmsg_hdr(msg)->nlmsg_seq == exchange(arg).seq ? NL_OK : NL_SKIP; }

int on_valid(nl_msg* msg, void* arg) {
    Exchange& x = exchange(arg);
    if (x.failure || !x.on_reply || !*x.on_reply) return NL_OK;
    try {
        (*x.on_reply)(msg);
    } catch (...) {
        x.failure = std::current_exception();  // keep reading: the answer must be drained
    }
    return NL_OK;
}

int on_ack(nl_msg*, void* arg) {
    exchange(arg).done = true;
    return NL_STOP;
}

// NLMSG_DONE carries the dump's final status as an int (netlink_dump_done()); a negative
// value means the dump failed part way (the kernel could not fill a message, say).
int on_finish(nl_msg* msg, void* arg) {
    Exchange& x = exchange(arg);
    nlmsghdr* hdr = nlmsg_hdr(msg);
    if (nlmsg_datalen(hdr) >= static_cast<int>(sizeof(int))) {
        int status = 0;
        std::memcpy(&status, nlmsg_data(hdr), sizeof status);
        if (status < 0) x.outcome.error = -status;
    }
    x.done = true;
    return NL_STOP;
}

int on_dump_intr(nl_msg*, void* arg) {
    exchange(arg).outcome.interrupted = true;
    return NL_OK;  // keep reading to NLMSG_DONE; the caller repeats the dump
}

// The kernel's extended-ack text (NLMSGERR_ATTR_MSG) that follows the nlmsgerr, if any.
std::string ext_ack_text(const nlmsgerr* err) {
    // libnl hands us nlmsg_data() of the NLMSG_ERROR message; step back to its header.
    const auto* hdr = reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(err) - NLMSG_HDRLEN);
    if (!(hdr->nlmsg_flags & NLM_F_ACK_TLVS)) return {};
    std::size_t offset = sizeof(nlmsgerr);
    // Without NLM_F_CAPPED the whole request is echoed after the nlmsgerr.
    if (!(hdr->nlmsg_flags & NLM_F_CAPPED) && err->msg.nlmsg_len > sizeof(nlmsghdr))
        offset += err->msg.nlmsg_len - sizeof(nlmsghdr);
    offset = NLA_ALIGN(offset);
    const std::size_t payload = hdr->nlmsg_len - NLMSG_HDRLEN;
    if (offset >= payload) return {};
    auto* attrs = reinterpret_cast<nlattr*>(const_cast<char*>(reinterpret_cast<const char*>(err)) + offset);
    nlattr* text = nla_find(attrs, static_cast<int>(payload - offset), NLMSGERR_ATTR_MSG);
    if (!text || nla_len(text) <= 0) return {};
    return std::string(static_cast<const char*>(nla_data(text)),
                       strnlen(static_cast<const char*>(nla_data(text)), static_cast<std::size_t>(nla_len(text))));
}

int on_error(sockaddr_nl*, nlmsgerr* err, void* arg) {
    Exchange& x = exchange(arg);
    x.outcome.error = -err->error;  // the kernel's errno, untranslated
    x.outcome.ext_ack = ext_ack_text(err);
    x.done = true;
    return NL_STOP;
}

// errno of a failed libnl call that wraps a system call, else the NLE_* code mapped back.
int failure_errno(int saved_errno, int nlerr) { return saved_errno != 0 ? saved_errno : errno_from_nlerr(nlerr); }

}  // namespace

int errno_from_nlerr(int nlerr) {
    switch (nlerr < 0 ? -nlerr : nlerr) {
    case NLE_SUCCESS: return 0;
    case NLE_INTR: return EINTR;
    case NLE_BAD_SOCK: return EBADF;
    case NLE_AGAIN: return EAGAIN;
    case NLE_NOMEM: return ENOMEM;
    case NLE_EXIST: return EEXIST;
    case NLE_INVAL: return EINVAL;
    case NLE_RANGE: return ERANGE;
    case NLE_MSGSIZE: return EMSGSIZE;
    case NLE_OPNOTSUPP: return EOPNOTSUPP;
    case NLE_AF_NOSUPPORT: return EAFNOSUPPORT;
    case NLE_OBJ_NOTFOUND: return ENOENT;
    case NLE_NOATTR: return ENOENT;
    case NLE_MISSING_ATTR: return EINVAL;
    case NLE_AF_MISMATCH: return EINVAL;
    case NLE_SEQ_MISMATCH: return EPROTO;
    case NLE_MSG_OVERFLOW: return EOVERFLOW;
    case NLE_MSG_TRUNC: return EMSGSIZE;
    case NLE_NOADDR: return EADDRNOTAVAIL;
    case NLE_SRCRT_NOSUPPORT: return EOPNOTSUPP;
    case NLE_MSG_TOOSHORT: return EPROTO;
    case NLE_MSGTYPE_NOSUPPORT: return EOPNOTSUPP;
    case NLE_OBJ_MISMATCH: return EINVAL;
    case NLE_NOCACHE: return ENOENT;
    case NLE_BUSY: return EBUSY;
    case NLE_PROTO_MISMATCH: return EPROTONOSUPPORT;
    case NLE_NOACCESS: return EACCES;
    case NLE_PERM: return EPERM;
    case NLE_PKTLOC_FILE: return ENOENT;
    case NLE_PARSE_ERR: return EPROTO;
    case NLE_NODEV: return ENODEV;
    case NLE_IMMUTABLE: return EPERM;
    case NLE_DUMP_INTR: return EINTR;
    case NLE_ATTRSIZE: return ERANGE;
    default: return EIO;
    }
}

void throw_if_error(const NlOutcome& outcome, const std::string& what) {
    if (outcome.error == 0) return;
    throw KernelError(outcome.error, outcome.ext_ack.empty() ? what : what + " (kernel: " + outcome.ext_ack + ")");
}

NlMsgPtr new_message(int type, int flags, const void* header, std::size_t header_len) {
    NlMsgPtr msg(nlmsg_alloc_simple(type, flags));
    if (!msg || nlmsg_append(msg.get(), const_cast<void*>(header), header_len, NLMSG_ALIGNTO) < 0)
        throw KernelError(ENOMEM, "allocate netlink message");
    return msg;
}

NlSocket::NlSocket(int protocol) : sock_(nl_socket_alloc()) {
    if (!sock_) throw KernelError(ENOMEM, "allocate netlink socket");
    errno = 0;
    if (int err = nl_connect(sock_.get(), protocol); err < 0)
        throw KernelError(failure_errno(errno, err),
                          "connect netlink socket (protocol " + std::to_string(protocol) + ")");
    // Read each datagram whole however large it is (link dumps with many VFs exceed a page).
    nl_socket_enable_msg_peek(sock_.get());
    // Ask for the kernel's error text, and for errors without an echo of our request. Older
    // kernels lack these options; the errno alone still works there.
    const int fd = nl_socket_get_fd(sock_.get());
    const int one = 1;
    (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
    (void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
}

NlOutcome NlSocket::transact(nl_msg* msg, const ReplyFn& on_reply) {
    NlCbPtr cb(nl_cb_alloc(NL_CB_DEFAULT));
    if (!cb) throw KernelError(ENOMEM, "allocate netlink callbacks");
    Exchange x;
    x.on_reply = &on_reply;
    nl_cb_set(cb.get(), NL_CB_SEQ_CHECK, NL_CB_CUSTOM, on_seq_check, &x);
    nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_valid, &x);
    nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, on_ack, &x);
    nl_cb_set(cb.get(), NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &x);
    nl_cb_set(cb.get(), NL_CB_DUMP_INTR, NL_CB_CUSTOM, on_dump_intr, &x);
    nl_cb_err(cb.get(), NL_CB_CUSTOM, on_error, &x);

    // Every request is acknowledged, so the loop below always has an end (dumps end with
    // NLMSG_DONE instead: the kernel sends no ACK for a dump even when asked).
    nlmsg_hdr(msg)->nlmsg_flags |= NLM_F_ACK;
    errno = 0;
    if (int err = nl_send_auto(sock_.get(), msg); err < 0) {
        x.outcome.error = failure_errno(errno, err);
        return x.outcome;
    }
    x.seq = nlmsg_hdr(msg)->nlmsg_seq;  // assigned by nl_send_auto

    while (!x.done) {
        errno = 0;
        int err = nl_recvmsgs(sock_.get(), cb.get());
        if (err < 0 && !x.done) {
            x.outcome.error = failure_errno(errno, err);
            break;
        }
    }
    if (x.failure) std::rethrow_exception(x.failure);
    return x.outcome;
}

}  // namespace rdmanet::netns::detail
