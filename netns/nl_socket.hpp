#pragma once
// Internal to netns/: owning wrappers for libnl objects and one netlink socket that sends a
// request and reads its whole answer, keeping the kernel's errno intact.
//
// Why not nl_wait_for_ack()/rtnl_link_change(): libnl turns the kernel's errno into its own
// NLE_* codes (nl_syserr2nlerr), which merges ENODEV and ENOENT into NLE_OBJ_NOTFOUND. Callers
// of this layer must tell "gone" from "busy" from "exists", so the error callback here records
// nlmsgerr->error itself, plus the kernel's extended-ack text for the exception message.
#include <netlink/addr.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/object.h>
#include <netlink/socket.h>

#include <functional>
#include <memory>
#include <string>

namespace rdmanet::netns::detail {

struct NlSockFree {
    void operator()(nl_sock* p) const { nl_socket_free(p); }
};
struct NlMsgFree {
    void operator()(nl_msg* p) const { nlmsg_free(p); }
};
struct NlCbPut {
    void operator()(nl_cb* p) const { nl_cb_put(p); }
};
struct NlAddrPut {
    void operator()(nl_addr* p) const { nl_addr_put(p); }
};

using NlSockPtr = std::unique_ptr<nl_sock, NlSockFree>;
using NlMsgPtr = std::unique_ptr<nl_msg, NlMsgFree>;
using NlCbPtr = std::unique_ptr<nl_cb, NlCbPut>;
using NlAddrPtr = std::unique_ptr<nl_addr, NlAddrPut>;
// Any libnl object type (rtnl_link, rtnl_addr, rtnl_route ...) released through nl_object_put.
template <class T>
struct NlObjFree {
    void operator()(T* p) const { nl_object_put(reinterpret_cast<nl_object*>(p)); }
};
template <class T>
using NlObjPtr = std::unique_ptr<T, NlObjFree<T>>;

// How one request ended.
struct NlOutcome {
    int error = 0;             // positive errno; 0 on success
    bool interrupted = false;  // a dump reply carried NLM_F_DUMP_INTR (inconsistent snapshot)
    std::string ext_ack;       // kernel's NLMSGERR_ATTR_MSG, when it sent one
};

// Throws KernelError(outcome.error, what [+ kernel message]) when the outcome is an error.
void throw_if_error(const NlOutcome& outcome, const std::string& what);
// libnl's NLE_* code mapped back to the closest errno, for failures that never reached the
// kernel (allocation, sendmsg/recvmsg). Kernel answers never go through this.
int errno_from_nlerr(int nlerr);
// A message of `type` with `flags` and a zeroed family header of `header_len` bytes; throws
// KernelError(ENOMEM) when allocation fails.
NlMsgPtr new_message(int type, int flags, const void* header, std::size_t header_len);

class NlSocket {
public:
    // Connects a socket of `protocol` (NETLINK_ROUTE ...) in the calling thread's netns; the
    // socket stays bound to that netns for its whole life.
    explicit NlSocket(int protocol);

    using ReplyFn = std::function<void(nl_msg*)>;
    // Sends `msg` with NLM_F_ACK and reads until the kernel's ACK, error or NLMSG_DONE; every
    // other message answering it is passed to `on_reply`. Messages with another sequence
    // number (left over from an abandoned request) are skipped. An exception thrown by
    // `on_reply` is rethrown after the answer has been read completely, so that the socket is
    // clean for the next request. The caller decides what an error means (throw_if_error).
    NlOutcome transact(nl_msg* msg, const ReplyFn& on_reply = {});

    nl_sock* get() const { return sock_.get(); }

private:
    NlSockPtr sock_;
};

}  // namespace rdmanet::netns::detail
