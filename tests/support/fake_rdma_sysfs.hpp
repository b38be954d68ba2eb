#pragma once
// A fake sysfs tree for the RDMA side, in a temporary directory removed on
// destruction: RDMA devices with ports, GID-table netdevs and parent PCI/auxiliary functions, and
// IPoIB netdev attributes. Point netns::Sysfs (or rdmanet-fakekernel's RDMANET_FAKE_SYSFS_ROOT) at root().
#include <string>
#include <vector>

namespace rdmanet::test {

struct FakeRdmaPort {
    unsigned port = 1;
    std::string state = "4: ACTIVE";
    std::string link_layer = "Ethernet";
    std::vector<std::string> netdevs;  // gid_attrs/ndevs/0.. (one per GID)
};

class FakeRdmaSysfs {
public:
    FakeRdmaSysfs();
    ~FakeRdmaSysfs();
    FakeRdmaSysfs(const FakeRdmaSysfs&) = delete;
    FakeRdmaSysfs& operator=(const FakeRdmaSysfs&) = delete;

    const std::string& root() const { return root_; }

    // A PCI function bus/pci/devices/<pci> (a directory), a VF of `pf` when pf is non-empty.
    void add_pci_function(const std::string& pci, const std::string& pf = "");
    // An auxiliary device bus/auxiliary/devices/<id>.
    void add_aux_device(const std::string& id);
    // class/infiniband/<name> with ports; `parent` (a PCI address or aux id added before, or "")
    // gets infiniband/<name> and the device's `device` link points to it.
    void add_rdma_device(const std::string& name, const std::string& parent, const std::vector<FakeRdmaPort>& ports,
                         const std::string& node_guid = "0000:0000:0000:0000");
    // Removes / restores an RDMA device from the host view, as the kernel does when it moves
    // into / out of a pod in exclusive mode.
    void hide_rdma_device(const std::string& name);
    void show_rdma_device(const std::string& name);
    // Removes an RDMA device for good, as its driver deleting it does (from the host view or
    // the hidden one).
    void delete_rdma_device(const std::string& name);
    // class/net/<ifname>/{type,pkey,mode}; type 32 = InfiniBand.
    void add_netdev(const std::string& ifname, unsigned type, const std::string& pkey = "",
                    const std::string& mode = "");

    // rdma_cm's configfs, below configfs_root() (point netns::RdmaCmConfigfs there): rdma_cm/
    // exists; with a device, its group too, as the kernel fills it on mkdir (a plain directory
    // cannot make ports/<n> by itself): ports/1..ports with default_roce_tos "0".
    std::string configfs_root() const { return root_ + "/configfs"; }
    void add_rdma_cm(const std::string& device = "", unsigned ports = 1);
    // What a namespace move does to the device's rdma_cm values: back to 0.
    void reset_rdma_cm(const std::string& device);
    std::string rdma_cm_tos(const std::string& device, unsigned port) const;  // "" = no such file

private:
    std::string root_;
};

}  // namespace rdmanet::test
