#pragma once
// End-to-end tests of the backends this kernel cannot run for real (sriov, ipoib): the test-only
// plugin binary rdmanet-fakekernel (tests/fakekernel/) driven by libcni or called directly, with
// PF-side VF netlink, RDMA netlink and IPoIB creation in a fake-kernel state file
// (support/fake_kernel_file.hpp) and a fake sysfs tree, while the VF netdevs / IPoIB children are
// real veth ends / macvlans that move between real namespaces.
#include <map>
#include <optional>
#include <string>

#include "e2e/e2e_helpers.hpp"
#include "support/fake_kernel_file.hpp"
#include "support/fake_rdma_sysfs.hpp"
#include "support/fake_sriov_node.hpp"
#include "support/fake_sysfs.hpp"

namespace rdmanet::test::e2e {

// The node: a fake sysfs tree and fake-kernel state file for one Workspace, laid out by
// FakeSriovNode (support/fake_sriov_node.hpp) with the IB VF's RDMA device mlx5_9, and the RDMA
// devices mlx5_0 (a PF's), mlx5_7 and mlx5_9 in the fake RDMA netlink. RDMA netns mode:
// `rdma_mode`.
struct SriovNode {
    static constexpr const char* kPfPci = FakeSriovNode::kPfPci;
    static constexpr const char* kVfPci = FakeSriovNode::kVfPci;
    static constexpr const char* kVfioPci = FakeSriovNode::kVfioPci;
    static constexpr const char* kIbPfPci = FakeSriovNode::kIbPfPci;
    static constexpr const char* kIbVfPci = FakeSriovNode::kIbVfPci;

    // `pf_driver`: the Ethernet PF's model in the fake kernel ("" = mlx5-like, "igb" = the
    // kernel lab's emulated Intel 82576: see support/fake_vf_control.hpp). With "igb", VF 1
    // (kVfioPci) has a netdev `vf1` like VF 0, as both igbvf VFs have in the lab, and the PF
    // supports 7 VFs.
    explicit SriovNode(const Workspace& ws, const std::string& rdma_mode = "exclusive",
                       const std::string& pf_driver = "");

    const Workspace& ws;
    ScopedVeth vf0{nullptr, nullptr, "vf"};
    ScopedVeth ibvf{nullptr, nullptr, "ib"};
    std::optional<ScopedVeth> vf1;
    std::string pf, ibpf;
    FakeSysfs tree;
    FakeKernelFile kernel;

    // ws.env() plus RDMANET_FAKE_SYSFS_ROOT and RDMANET_FAKE_KERNEL_STATE.
    std::map<std::string, std::string> env() const;
    // The VF as the fake kernel holds it now (VfInfo JSON).
    nlohmann::json vf(const std::string& pf_name, unsigned index) const;
    // The RDMA device's owner now: 0 = the host (initial namespace). Observed through the model,
    // so the devices of a namespace that died since the last kernel call are home already.
    std::uint64_t rdma_owner(const std::string& device) const;
    // PF-side writes accepted so far.
    std::vector<std::string> vf_log() const;
    // A software RDMA device (rxe) over `netdev`, in sysfs and in the fake RDMA netlink: owned by
    // the host, no PCI function, cannot change namespace (as rxe cannot).
    void add_soft_rdma_device(const std::string& name, const std::string& netdev);
};

// An IPoIB parent: a veth end (MTU 4092, up) whose sysfs entry says InfiniBand, pkey 0xffff,
// connected mode; an empty fake kernel (IPoIB children are recorded there when created).
struct IpoibNode {
    explicit IpoibNode(const Workspace& ws);
    std::map<std::string, std::string> env() const;  // as SriovNode::env()
    json created() const;                            // the fake kernel's "ipoib" list

    const Workspace& ws;
    ScopedVeth parent{nullptr, nullptr, "ibp"};
    FakeRdmaSysfs sys;
    FakeKernelFile kernel;
};

// The attachment state of rdmanet (one JSON file per attachment) and the sriov in-use records,
// without the lock files, which stay by design (an flock needs a file to lock).
// The host-side view of a VF netdev that DEL (or the recovery after a kill) must restore.
struct HostNetdev {
    std::string name, mac, alias;
    unsigned mtu = 0;
    bool up = false;
    friend bool operator==(const HostNetdev&, const HostNetdev&) = default;
};
std::optional<HostNetdev> host_netdev(const std::string& name);

std::vector<std::string> attachment_files(const Workspace& ws);
bool vf_record_exists(const Workspace& ws, const std::string& pci);

// A plugin object of type rdmanet-fakekernel.
json fakekernel_plugin(const std::string& mode, const json& ipam, const json& extra = json::object());

// One libcni call of `conflist` with the fake-kernel binary on CNI_PATH.
struct FakeKernelCall {
    FakeKernelCall(std::string verb_, std::string conflist_, std::string netns_, std::string container_id_)
        : verb(std::move(verb_)),
          conflist(std::move(conflist_)),
          netns(std::move(netns_)),
          container_id(std::move(container_id_)) {}
    std::string verb;
    std::string conflist;
    std::string netns;
    std::string container_id;
    std::string ifname = "net1";
    std::string cap_args;
    std::string args;
    bool single_plugin = false;  // `conflist` is one plugin configuration (DriverRequest::single_plugin)
};
CniOutcome drive(const Workspace& ws, const std::map<std::string, std::string>& env, const FakeKernelCall& call);

// Runs `call` again as `verb` (the runtime's CHECK or DEL after an ADD) and requires success; a
// failure shows the plugin's answer. `call.verb` is left at `verb`, so a repeat is one drive().
void require_verb_ok(const Workspace& ws, const std::map<std::string, std::string>& env, FakeKernelCall& call,
                     const std::string& verb);

// <test-bin>/rdmanet-fakekernel.
std::string fakekernel_path();

}  // namespace rdmanet::test::e2e
