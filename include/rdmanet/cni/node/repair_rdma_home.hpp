#pragma once
// Before the node agent undoes an attachment whose sandbox is gone: is the RDMA device it moved
// into the pod back in the host?
//
// In exclusive RDMA netns mode the kernel returns a pod's RDMA device to the initial namespace
// when the namespace is freed (the RDMA core's pernet exit moves the devices of a dying netns
// back to init_net, keeping their names: a device renamed by rdma.deviceName comes home under
// the pod's name, and the repair's teardown renames it back), at the same time as it hands back a physical netdev.
// A netns whose path is gone is not necessarily freed: a leftover process, an open fd or a bind
// mount elsewhere keeps it, and with it the VF's netdev and RDMA device. Undoing the attachment
// then would release the VF to the next pod while its devices sit in an unreachable namespace,
// and drop the only record of where they are. So the repair waits: it undoes nothing and reports
// the attachment as failed (kept for the next pass) until the device is home.
#include <chrono>
#include <optional>
#include <string>

#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/plugin/plugin.hpp"

namespace rdmanet::cni::node {

// nullopt when nothing keeps the repair from running: no RDMA device was moved, the node is not
// in exclusive mode (or has no RDMA netlink), the device is visible in the host namespace, or
// its PCI function no longer exists (the device went away with it). Otherwise why not, for the
// report. The namespace's cleanup runs asynchronously after its last reference goes, so the
// device is looked for until `settle` has passed.
std::optional<std::string> rdma_device_not_home(const AttachmentState& state, const KernelServices& services,
                                                std::chrono::milliseconds settle = std::chrono::milliseconds(2000));

}  // namespace rdmanet::cni::node
