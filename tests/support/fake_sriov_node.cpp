#include "support/fake_sriov_node.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "rdmanet/netns/rtnl.hpp"

namespace rdmanet::test {

void FakeSriovNode::build(FakeSysfs& tree, FakeVfControl& vfs) const {
    tree.add_pf(kPfPci, pf);
    tree.add_vf(kPfPci, 0, kVfPci, vf0_netdev);
    if (vf1_netdev.empty())
        tree.add_vf(kPfPci, 1, kVfioPci, std::nullopt, "vfio-pci");
    else
        tree.add_vf(kPfPci, 1, kVfioPci, vf1_netdev);
    if (pf_driver == "igb") std::ofstream(std::filesystem::path(tree.function_dir(kPfPci)) / "sriov_totalvfs") << "7\n";
    tree.add_rdma_device(kVfPci, "mlx5_7");
    tree.add_pf(kIbPfPci, ibpf, /*infiniband=*/true);
    tree.add_vf(kIbPfPci, 0, kIbVfPci, ibvf_netdev);
    if (ib_vf_rdma) tree.add_rdma_device(kIbVfPci, "mlx5_9");

    vfs.add_pf(pf, 2, /*infiniband=*/false, pf_driver);
    vfs.add_pf(ibpf, 1, /*infiniband=*/true);
    netns::VfInfo& vf = vfs.vf(pf, 0);
    vf.mac = kVfMac;
    vf.vlan = 7;
    vf.max_tx_rate = 300;

    netns::Rtnl host;
    const auto link = host.link_by_name(vf0_netdev);
    if (!link) throw std::runtime_error("VF netdev " + vf0_netdev + " missing");
    host.set_mtu(link->index, 1450);
    host.set_alias(link->index, "before-pod");
    host.set_up(link->index, true);
}

}  // namespace rdmanet::test
