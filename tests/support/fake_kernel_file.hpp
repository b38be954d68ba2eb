#pragma once
// The fake kernel of the test-only plugin binary rdmanet-fakekernel (tests/fakekernel/): the
// in-memory fakes (FakeVfControl, FakeRdmaKernel, StandInIpoibLinks) with their state kept in a
// JSON file, so that SR-IOV, IPoIB and RDMA isolation run as a real process driven by libcni, and
// so that a process SIGKILLed in the middle of ADD leaves exactly the "kernel" state a recovery
// DEL must restore.
//
// Every operation takes an exclusive flock on <file>.lock, loads the file into the in-memory
// fakes, runs the operation on them and writes the result back atomically (temp + rename). The
// kernel semantics are therefore the in-memory fakes' own, never a copy; concurrent plugin
// processes see one consistent "kernel", as they would see the real one.
//
// File layout (tests write the starting point and read it back):
//   {"vf":        {"<pf>": {"infiniband": bool, "vfs": [VfInfo, encoded as in the attachment state]}},
//    "vfLog":     ["<pf>: vf 0 vlan 100 qos 0 proto 0x8100", ...]      accepted PF-side writes
//    "rdma":      {"mode": "shared"|"exclusive",
//                  "devices": [{"index", "name", "canDisassociate", "owner", "pci"}]},
//    "rdmaCalls": ["sys_get", "get", "move mlx5_7", ...]                RDMA netlink requests
//    "ipoib":     [{"name", "parentIndex", "pkey", "mode", "umcast"}]}  IPoIB children created
// An RDMA device's "owner" is 0 for the initial namespace, else the nsfs inode of the namespace
// holding it; on every load a device whose namespace no longer exists returns to the initial one
// (what the kernel does when a namespace dies). Its optional "pci" names its PCI function in the
// fake sysfs tree (RDMANET_FAKE_SYSFS_ROOT): a device that leaves the initial namespace disappears from
// class/infiniband and the function's infiniband/ dir, and reappears when it comes back, as the
// kernel's host view does in exclusive mode.
//
// RDMA GID tables as a pod sees them: sysfs' class/infiniband is namespace-tagged, so the plugin
// reads a device inside a pod from a sysfs mounted in the pod's namespace. The fake's stand-in for
// that view is <RDMANET_FAKE_SYSFS_ROOT>/rdma-netns (kRdmaNetnsView): class/infiniband/<name>/
// ports/<p>/{link_layer,gids/<i>,gid_attrs/types/<i>}, laid out by tests; it is read only while
// the asking namespace sees the device, and a rename renames the device's directory there (and in
// the host tree while the device is home).
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/plugin/plugin.hpp"
#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"
#include "rdmanet/netns/ipoib.hpp"
#include "rdmanet/netns/rtnl.hpp"
#include "rdmanet/netns/vf.hpp"
#include "support/build_paths.hpp"
#include "support/fake_rdma.hpp"
#include "support/fake_vf_control.hpp"

namespace rdmanet::test {

// The environment variable naming the state file of rdmanet-fakekernel.
inline constexpr const char* kFakeKernelStateEnv = "RDMANET_FAKE_KERNEL_STATE";
// rdmanet-fakekernel reads sysfs under this root instead of /sys (a fake PCI/RDMA tree).
inline constexpr const char* kFakeSysfsRootEnv = "RDMANET_FAKE_SYSFS_ROOT";
// Below the fake sysfs root: the sysfs view of namespaces that own RDMA devices (see above).
inline constexpr const char* kRdmaNetnsView = "rdma-netns";

class FakeKernelFile {
public:
    // `sysfs_root` "" = no sysfs tree to keep in step with RDMA device moves. The namespace the
    // caller is in now is the fake RDMA kernel's initial one (init_net): the plugin and the tests
    // both run in the host namespace.
    explicit FakeKernelFile(std::string path, std::string sysfs_root = "");

    const std::string& path() const { return path_; }
    const std::string& sysfs_root() const { return sysfs_root_; }
    // The file as it is now ({} when it does not exist yet).
    nlohmann::json read() const;
    // Replaces the file atomically (used by tests to lay out the starting point).
    void write(const nlohmann::json& state) const;

    // The in-memory fakes loaded from the file.
    struct Model {
        explicit Model(ino_t init_netns) : rdma(init_netns) {}
        FakeVfControl vf;
        FakeRdmaKernel rdma;
        nlohmann::json ipoib = nlohmann::json::array();
    };
    // Under the lock: load, run `fn`, save. When `fn` throws nothing is saved (the fakes refuse
    // before they change anything) and the exception propagates.
    void update(const std::function<void(Model&)>& fn) const;

private:
    void set_rdma_visible(const std::string& device, const std::string& pci, bool visible) const;
    void rename_in_sysfs(const std::string& from, const std::string& to, const std::string& pci, bool home) const;
    std::string path_;
    std::string sysfs_root_;
    ino_t init_netns_;
};

// The three kernel services over one state file, for cni::run_plugin.
class FakeKernelServices {
public:
    // `host` is the rtnetlink socket of the namespace IPoIB stand-in children are created in.
    FakeKernelServices(const std::string& path, const std::string& sysfs_root, netns::Rtnl& host);
    FakeKernelServices(const FakeKernelServices&) = delete;
    FakeKernelServices& operator=(const FakeKernelServices&) = delete;
    ~FakeKernelServices();

    cni::KernelServices services();

private:
    FakeKernelFile file_;
    std::unique_ptr<netns::VfControl> vf_;
    cni::RdmaAccess rdma_;
    std::unique_ptr<netns::IpoibLinks> ipoib_;
};

}  // namespace rdmanet::test
