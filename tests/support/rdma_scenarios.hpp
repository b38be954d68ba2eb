#pragma once
// RDMA netlink semantics as scenarios, run against FakeRdmaKernel (unit tests) and against a
// real RDMA kernel (the QEMU lab: Debian 6.1 + soft-RoCE, tests tagged [rdma-real]), so the fake
// cannot drift from the kernel. Each scenario asserts with Catch2 and leaves the mode shared.
//
// Preconditions: the mode is shared on entry, and no namespace other than the initial one exists
// (the lab guest is fresh; the fake starts that way): mode changes need that (EBUSY otherwise).
#include <functional>
#include <memory>
#include <string>

#include "rdmanet/netns/rdma.hpp"

namespace rdmanet::test::rdma_scenarios {

// A network namespace (or, for the fake, a token standing for one) alive while the object is.
class ScenarioNetns {
public:
    virtual ~ScenarioNetns() = default;
    virtual int fd() const = 0;
};

struct Env {
    netns::RdmaNetlink& host;      // opened in the initial namespace
    int host_netns_fd = -1;        // fd of the initial namespace (to move devices back)
    std::string device;            // an RDMA device of the host, e.g. "rxe0"
    bool device_can_move = false;  // false for rxe: it cannot disassociate (EOPNOTSUPP)
    std::function<std::unique_ptr<ScenarioNetns>()> make_netns;
    std::function<std::unique_ptr<netns::RdmaNetlink>(const ScenarioNetns&)> open_in;
};

// SYS_GET answers "shared" (the default, and every scenario's exit state).
void mode_read(Env& env);
// shared -> exclusive -> exclusive (no-op) -> shared, each read back.
void mode_set_roundtrip(Env& env);
// With another namespace alive: a change is EBUSY and the mode stays; setting the current mode
// still succeeds. After the namespace is gone the change goes through (retried while the kernel
// finishes tearing the namespace down asynchronously).
void mode_change_busy_with_netns(Env& env);
// GET dump lists the device once with a non-zero index; name -> index agrees with the dump;
// an unknown name is not found.
void enumeration_and_lookup(Env& env);
// Shared mode: every namespace sees the device; moving it is EOPNOTSUPP and it stays.
void move_refused_in_shared_mode(Env& env);
// Exclusive mode: a new namespace sees no RDMA device, the host still does; moving the device is
// EOPNOTSUPP when it cannot disassociate (rxe) and leaves it in the host, else it leaves the
// host's view, appears in the namespace's, and comes back when moved from inside. Ends shared.
void exclusive_isolation(Env& env);

// Rename (`rdma dev set <dev> name <new>`): the device is listed under the new name only, the
// current name is a no-op, an empty name is EINVAL, a name another device of the node has is
// EEXIST (when the node has another device); renamed back at the end, even on failure.
void rename_rules(Env& env);

// All of the above in order.
void run_all(Env& env);

// A software device bound to a netdev (rxe over env.device's netdev): when that netdev leaves the
// initial namespace (`netdev_leaves`), its driver deletes the device (NETDEV_UNREGISTER; queued,
// so retried for a few seconds), and it stays gone when the netdev returns (`netdev_returns`).
// Not in run_all: it destroys the device, which the caller re-creates.
void bound_device_deleted_with_netdev(Env& env, const std::function<void()>& netdev_leaves,
                                      const std::function<void()>& netdev_returns);

// SYS_SET retried on EBUSY for up to `seconds` (namespace teardown is asynchronous in the kernel).
void set_mode_when_idle(netns::RdmaNetlink& nl, netns::RdmaNetnsMode mode, int seconds = 10);

}  // namespace rdmanet::test::rdma_scenarios
