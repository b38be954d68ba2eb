#pragma once
// The simulated SR-IOV node shared by the in-process sriov bed (tests/integration/sriov_bed.hpp)
// and the e2e node driven through libcni (tests/e2e/e2e_fakekernel.hpp), so both exercise the
// same PCI layout and the same starting point that DEL must restore:
//   PF kPfPci (netdev `pf`):     VF 0 kVfPci   (netdev `vf0_netdev`, RDMA device mlx5_7),
//                                VF 1 kVfioPci (bound to vfio-pci, no netdev; with `vf1_netdev`
//                                set, a netdev VF of that name instead, as igbvf's in the lab);
//   IB PF kIbPfPci (`ibpf`):     VF 0 kIbVfPci (netdev `ibvf_netdev`; RDMA device mlx5_9 when
//                                `ib_vf_rdma`, which the e2e node's fake RDMA netlink knows).
// VF 0 starts with admin MAC 0a:00:00:00:00:aa, vlan 7, max_tx_rate 300; its netdev (a real
// veth end of the caller's) with MTU 1450, alias "before-pod", up. With pf_driver "igb" the PF
// supports 7 VFs (sriov_totalvfs), as the 82576 in the kernel lab.
#include <string>

#include "support/fake_sysfs.hpp"
#include "support/fake_vf_control.hpp"

namespace rdmanet::test {

struct FakeSriovNode {
    static constexpr const char* kPfPci = "0000:af:00.0";
    static constexpr const char* kVfPci = "0000:af:00.2";
    static constexpr const char* kVfioPci = "0000:af:00.3";
    static constexpr const char* kIbPfPci = "0000:d8:00.0";
    static constexpr const char* kIbVfPci = "0000:d8:00.1";
    static constexpr const char* kVfMac = "0a:00:00:00:00:aa";

    std::string pf, ibpf, vf0_netdev, ibvf_netdev;
    bool ib_vf_rdma = false;
    std::string pf_driver{};   // the Ethernet PF's driver model in FakeVfControl: "" or "igb"
    std::string vf1_netdev{};  // "" = VF 1 bound to vfio-pci without a netdev

    // Lays the PCI functions out in `tree`, the PFs and VF 0's settings in `vfs`, and sets VF 0's
    // netdev (MTU, alias, up) on the real kernel in the current namespace.
    void build(FakeSysfs& tree, FakeVfControl& vfs) const;
};

}  // namespace rdmanet::test
