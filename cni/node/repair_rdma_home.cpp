// Is a stranded attachment's RDMA device back in the host (repair_rdma_home.hpp)?
#include "rdmanet/cni/node/repair_rdma_home.hpp"

#include <cerrno>
#include <thread>

#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/namespace.hpp"
#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::cni::node {

namespace {

bool no_rdma_netlink(const netns::KernelError& e) {
    const int err = e.errno_value();
    return err == EPROTONOSUPPORT || err == EINVAL || err == EOPNOTSUPP;
}

}  // namespace

std::optional<std::string> rdma_device_not_home(const AttachmentState& state, const KernelServices& services,
                                                std::chrono::milliseconds settle) {
    if (state.rdma_device.empty()) return std::nullopt;
    const RdmaAccess& access = services.rdma ? *services.rdma : kernel_rdma_access();
    const auto host_ns = netns::NetNamespace::current();
    std::unique_ptr<netns::RdmaNetlink> host;
    try {
        host = access.open_in(host_ns);
        // Shared mode: the device never left the host's view.
        if (host->netns_mode() != netns::RdmaNetnsMode::exclusive) return std::nullopt;
    } catch (const netns::KernelError& e) {
        if (no_rdma_netlink(e)) return std::nullopt;
        throw;
    }
    const auto deadline = std::chrono::steady_clock::now() + settle;
    for (;;) {
        // Home under its own name, or under the pod's (rdma.deviceName): the teardown that follows
        // (the mode's DEL without a pod namespace) gives it its own name back.
        if (host->device_by_name(state.rdma_device)) return std::nullopt;
        if (!state.rdma_device_pod_name.empty() && host->device_by_name(state.rdma_device_pod_name))
            return std::nullopt;
        if (std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const netns::Sysfs real_sysfs;
    const netns::Sysfs& sysfs = services.sysfs ? *services.sysfs : real_sysfs;
    if (!state.pci_address.empty() && !sysfs.pci_device_exists(state.pci_address) &&
        !sysfs.aux_device_exists(state.pci_address))
        return std::nullopt;
    return "RDMA device " + state.rdma_device + " is not back in the host namespace: the pod's network namespace " +
           "still exists although its path is gone (a process, an open file descriptor or a bind mount " +
           "elsewhere holds it, and with it the device); nothing was undone, the next pass checks again";
}

}  // namespace rdmanet::cni::node
