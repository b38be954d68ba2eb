#pragma once
// RDMA device isolation (`rdma.isolation`): in exclusive RDMA netns mode
// the RDMA device of the function a pod gets (hostdev, SR-IOV VF, SF) moves into the pod's
// namespace along with its netdev, and back on DEL.
//
// Order (ib-sriov-cni, rdma-cni PR #21): ADD = GUID set + rebind -> RDMA device into the pod ->
// netdev into the pod (moving the RDMA device recreates its IPoIB netdevs in the host namespace,
// so the netdev must move after it). DEL = netdev out -> RDMA device back -> GUID restore.
//
// The decision is a pure function (decide_rdma_isolation) over what sysfs and RDMA netlink
// reported; the effects around it are the three calls backends make.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmanet/cni/modes/backend.hpp"
#include "rdmanet/cni/config/rdma_conf.hpp"
#include "rdmanet/netns/namespace.hpp"
#include "rdmanet/netns/rdma.hpp"
#include "rdmanet/netns/rdma_gids.hpp"

namespace rdmanet::cni {

// How isolation reaches RDMA netlink. The plugin uses kernel_rdma_access(); tests pass a fake
// through KernelServices::rdma (modes/kernel.hpp).
struct RdmaAccess {
    // Opens RDMA netlink inside `ns` (a socket sees only its own namespace's devices in
    // exclusive mode, so the way back is opened inside the pod).
    std::function<std::unique_ptr<netns::RdmaNetlink>(const netns::NetNamespace& ns)> open_in;
    // Reads the GID table of `device` as the namespace `ns` sees it (netns/rdma_gids.hpp); null =
    // the real kernel's sysfs, mounted from inside `ns`.
    std::function<netns::RdmaGidTable(const netns::NetNamespace& ns, const std::string& device)> gids_in;
};
const RdmaAccess& kernel_rdma_access();

// ---- pure decision -------------------------------------------------------------------------

enum class RdmaStep { nothing, move, fail };

struct RdmaFacts {
    RdmaIsolation policy = RdmaIsolation::auto_;
    // macvlan/ipoib: the pod gets a child of a parent whose RDMA device stays shared; the pod
    // can never own it.
    bool child = false;
    std::vector<std::string> devices;          // RDMA devices of the function / the parent
    std::optional<netns::RdmaNetnsMode> mode;  // nullopt: no RDMA netlink / netns support
    std::string subject;                       // "PCI device 0000:af:00.2", "master ib0"
    // The single device is a software one bound to the netdev the pod gets (rxe): its driver
    // deletes it when that netdev moves, so the pod cannot own it and the host loses it.
    bool bound_to_netdev = false;
    std::string netdev;  // that netdev's host name (for the messages)
};

struct RdmaDecision {
    RdmaStep step = RdmaStep::nothing;
    std::string device;   // the device to move (step move)
    std::string message;  // the error (fail), a warning (warn) or why nothing happens
    std::string hint;     // what an admin does about a failure (CNI error details)
    bool warn = false;    // log `message` as a warning
};

RdmaDecision decide_rdma_isolation(const RdmaFacts& facts);

// ---- effects, called by the backends -------------------------------------------------------

// The function handed to the pod: its PCI address or auxiliary id (may be empty, then the RDMA
// device is found through the netdev's GID table / parent device) and its host netdev name.
struct RdmaFunction {
    std::string function_id;
    std::string netdev;
};

// ADD of a backend that hands the pod a whole function (hostdev, sriov). Call after any GUID
// rebind (the device may have a new name) and BEFORE the netdev moves. Reads the netns mode,
// and in exclusive mode moves the function's RDMA device into req.kernel.pod_ns; records its
// name in req.state.rdma_device (saved through req.save_state before the move) and pushes the
// move back on req.rollback. With rdma.deviceName it then renames the device inside the pod
// (recorded in req.state.rdma_device_pod_name first, undone on rollback); a name another device
// of the node holds (EEXIST) is invalid_config. Throws Error when `required` cannot be met; with `auto` a failed
// move is logged as a warning and ADD goes on. Touches nothing when the function has no RDMA
// device and the policy is not `required`.
void rdma_isolation_add(const AddRequest& req, const RdmaFunction& function);

// The end of ADD, after the netdev moved and the pod interface was configured (everything that
// can make a driver delete or re-create the device): when ADD moved an RDMA device
// (req.state.rdma_device), checks that the pod owns it (visible in the pod's RDMA netlink view,
// not in the host's). When it does not, `required` throws Error 100 naming the device and what
// happened (ADD's rollback then undoes the rest); `auto` logs a warning and forgets the device.
void rdma_isolation_verify_owned(const AddRequest& req);

// ADD, before anything changes (IPAM, devices): rdma.deviceName must not be taken by an RDMA
// device the pod's namespace already sees (another rail renamed to it, or in shared mode any
// device of the node). Throws Error invalid_config (7) naming the key.
void rdma_device_name_precheck(const NetConf& conf, const netns::NetNamespace& pod_ns, const RdmaAccess* rdma);

// ADD of a child backend (macvlan, ipoib) on `parent_netdev`: never moves anything. Throws Error
// when the policy is `required` (a child cannot own its parent's RDMA device); in exclusive mode
// with `auto` it logs a warning that the pod will not see the parent's RDMA device. rdma.deviceName
// is refused (invalid_config) for the same reason.
void rdma_isolation_check_child(const AddRequest& req, const std::string& parent_netdev);

// DEL: returns state->rdma_device to the host from a socket inside the pod namespace, when the
// pod still owns it (exclusive mode, visible there). Nothing to do when the pod namespace is gone
// (the kernel returned it) or nothing was moved. A device renamed by rdma.deviceName gets its
// host name back first (inside the pod; or in the host, when the kernel already returned it
// under the pod's name). Throws KernelError only for real failures
// (EPERM ...), so that DEL is retried; never because something is already gone. Call it AFTER
// the netdev has been returned.
void rdma_isolation_del(const DelRequest& req);

}  // namespace rdmanet::cni
