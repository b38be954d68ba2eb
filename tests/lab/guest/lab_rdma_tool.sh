# RDMA netlink semantics of this kernel, through iproute2's `rdma` tool: the behaviour rdmanet's
# own RDMA netlink code (and its fake) must match. Leaves the system in shared mode, no netns.

mode_is() { output_has "netns $1" rdma system show netns; }
no_netns_left() { [ -z "$(ls /run/netns 2>/dev/null)" ]; }
# The kernel forgets a deleted netns asynchronously (cleanup_net workqueue): until then a mode
# change still answers EBUSY, so setting a mode right after `ip netns del` is retried.
set_mode() { retry 10 rdma system set netns "$1"; }

check "rdma tool: the default netns mode is shared" mode_is shared

ip netns add lab1
check "rdma tool: set exclusive with another netns present fails with EBUSY" \
  fails_with "busy" rdma system set netns exclusive
check "rdma tool: the mode is still shared after the refused change" mode_is shared
ip netns del lab1

check "rdma tool: set exclusive without another netns succeeds" set_mode exclusive
check "rdma tool: the mode now reads exclusive" mode_is exclusive

ip netns add lab2
check "rdma tool: exclusive: the host netns still sees rxe0" output_has "rxe0" rdma dev show
check "rdma tool: exclusive: a new netns sees no RDMA device" \
  output_lacks "rxe0" ip netns exec lab2 rdma dev show
check "rdma tool: exclusive: moving rxe0 into a netns fails with EOPNOTSUPP (rxe cannot disassociate)" \
  fails_with "not supported" rdma dev set rxe0 netns lab2
check "rdma tool: rxe0 is still in the host netns after the refused move" output_has "rxe0" rdma dev show
check "rdma tool: set shared with another netns present fails with EBUSY" \
  fails_with "busy" rdma system set netns shared
ip netns del lab2

check "rdma tool: set shared again once the netns is gone" set_mode shared
check "rdma tool: the mode reads shared again" mode_is shared

ip netns add lab3
check "rdma tool: shared: a new netns sees rxe0" output_has "rxe0" ip netns exec lab3 rdma dev show
check "rdma tool: shared: moving rxe0 into a netns fails with EOPNOTSUPP" \
  fails_with "not supported" rdma dev set rxe0 netns lab3
ip netns del lab3
check "rdma tool: no lab netns left" retry 5 no_netns_left
