# Soft-RoCE: rxe0 over the veth end va (vb is its peer). Later sections rely on this device.
rxe_setup() {
  ip link add va type veth peer name vb &&
    ip link set va up &&
    ip link set vb up &&
    rdma link add rxe0 type rxe netdev va
}
check "soft-RoCE: veth va/vb and 'rdma link add rxe0 type rxe netdev va'" rxe_setup
check "soft-RoCE: /sys/class/infiniband/rxe0 exists" test -d /sys/class/infiniband/rxe0
check "soft-RoCE: 'rdma link' shows rxe0 port 1 on netdev va" output_has "netdev va" rdma link show rxe0/1
# The port turns ACTIVE once va has carrier (both veth ends up); give the kernel a moment.
port_active() { output_has "PORT_ACTIVE" ibv_devinfo -d rxe0; }
check "soft-RoCE: libibverbs lists rxe0 with port 1 PORT_ACTIVE (ibv_devinfo)" retry 10 port_active
check "soft-RoCE: gid_attrs/ndevs/0 of rxe0 port 1 names va" \
  file_is /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0 va
