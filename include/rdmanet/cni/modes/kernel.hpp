#pragma once
// The one seam between the CNI verbs and the kernel. Every verb (ADD, DEL, CHECK) builds one
// Kernel (cni/plugin/plugin.cpp, the only place that does) and every mode reaches the kernel
// through it: the namespaces and rtnetlink sockets the verb opened, sysfs, and the kernel
// interfaces a process may replace with fakes (KernelServices).

namespace rdmanet::netns {
class IpoibLinks;
class NetNamespace;
class RdmaCmConfigfs;
class Rtnl;
class Sysfs;
class VfControl;
}  // namespace rdmanet::netns

namespace rdmanet::cni {

struct RdmaAccess;

// The kernel interfaces this development kernel lacks, and sysfs, injectable for in-process
// tests (a null member means the real kernel's). The plugin binary always uses the real ones: it
// reads no environment switch that could put a fake under a production ADD (the state directory
// comes from the node policy). The test-only binary rdmanet-fakekernel (tests/fakekernel/, never
// installed) is the one process that passes file-backed fakes.
struct KernelServices {
    netns::VfControl* vf = nullptr;                  // PF-side SR-IOV VF netlink (netns/vf.hpp)
    const RdmaAccess* rdma = nullptr;                // RDMA netlink for rdma.isolation (rdma_isolation.hpp)
    netns::IpoibLinks* ipoib = nullptr;              // IPoIB child creation (netns/ipoib.hpp)
    const netns::Sysfs* sysfs = nullptr;             // a fake sysfs tree (PCI functions, VFs, RDMA devices)
    const netns::RdmaCmConfigfs* rdma_cm = nullptr;  // rdma_cm's configfs for rdma.tos (/sys/kernel/config)
};

// What one verb hands every mode. Both rtnetlink sockets are opened once: `host` in the namespace
// the plugin runs in, `pod` inside the pod's namespace (a netlink socket stays bound to the netns
// it was created in).
struct Kernel {
    const netns::NetNamespace& host_ns;
    netns::Rtnl& host;
    // The pod's namespace and a socket in it. Always set for ADD and CHECK (the verb fails before
    // a mode runs when it cannot open them); null for a DEL whose pod namespace is gone.
    const netns::NetNamespace* pod_ns;
    netns::Rtnl* pod;
    // Sysfs: services.sysfs when one was injected, else the real /sys.
    const netns::Sysfs& sysfs;
    // The injected interfaces (null members: the real kernel's); services.sysfs is already
    // resolved into `sysfs` above.
    KernelServices services;
};

}  // namespace rdmanet::cni
