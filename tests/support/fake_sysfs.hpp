#pragma once
// A fake sysfs tree per test (the plugin reads sysfs through a configurable root: Sysfs(root) in
// process, RDMANET_FAKE_SYSFS_ROOT for the test-only rdmanet-fakekernel). It lays out what the
// kernel's sysfs shows for PCI functions, SR-IOV PFs and VFs, auxiliary SFs and RDMA devices,
// with the same links:
//
//   devices/pci0000:00/<pci>/                      the function's real directory
//       driver -> bus/pci/drivers/<drv>            (absent when unbound)
//       vendor                                     "0x15b3"
//       physfn -> <pf dir>                         VFs only
//       virtfn<i> -> <vf dir>                      PFs only
//       sriov_numvfs                               PFs only
//       net/<netdev>/                              netdevs of the function
//       infiniband/<rdma dev>/                     RDMA devices of the function
//   bus/pci/devices/<pci> -> devices/pci0000:00/<pci>
//   bus/pci/drivers/<drv>/{bind,unbind}            regular files: the last write is readable
//   bus/auxiliary/devices/<sf> -> devices/.../<pci>/<sf>   with net/ and infiniband/
//   class/net/<netdev>/{device -> function dir, type}      type 1 Ethernet, 32 InfiniBand
//   class/infiniband/<rdma dev>/device -> function dir
//
// Netdev names are usually real veth ends created by the test, so that the move/rename path
// runs on the real kernel. Everything lives in a temp dir removed on destruction. New device
// kinds: add a member function here (the rdma helper's additions go below the marked line).
#include <optional>
#include <string>
#include <vector>

#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::test {

class FakeSysfs {
public:
    FakeSysfs();
    ~FakeSysfs();
    FakeSysfs(const FakeSysfs&) = delete;
    FakeSysfs& operator=(const FakeSysfs&) = delete;

    const std::string& root() const { return root_; }
    netns::Sysfs sysfs() const { return netns::Sysfs(root_); }

    // A PCI function with an optional netdev; no SR-IOV (hostdev-style device).
    void add_function(const std::string& pci, const std::optional<std::string>& netdev,
                      const std::string& driver = "mlx5_core", bool infiniband = false);
    // An SR-IOV PF with its netdev; VFs are added with add_vf.
    void add_pf(const std::string& pci, const std::string& netdev, bool infiniband = false,
                const std::string& driver = "mlx5_core");
    // VF number `index` of the PF at `pf_pci`; `netdev` nullopt for a VF without one (vfio).
    void add_vf(const std::string& pf_pci, unsigned index, const std::string& pci,
                const std::optional<std::string>& netdev, const std::string& driver = "mlx5_core");
    // An auxiliary device (mlx5 SF) below `parent_pci`, with an optional netdev and RDMA device.
    void add_aux_sf(const std::string& parent_pci, const std::string& aux_id, const std::optional<std::string>& netdev,
                    const std::optional<std::string>& rdma_device);
    // An RDMA device of the PCI function `pci` (infiniband/<name> and class/infiniband/<name>).
    void add_rdma_device(const std::string& pci, const std::string& name);
    void remove_rdma_device(const std::string& pci, const std::string& name);

    // What the kernel's sysfs does when a netdev is renamed / leaves the host / comes back.
    void rename_netdev(const std::string& pci, const std::string& from, const std::string& to);
    void remove_netdev(const std::string& pci, const std::string& name);
    void add_netdev(const std::string& pci, const std::string& name, bool infiniband = false);
    // Rebinds `pci` to `driver` ("" = unbound).
    void set_driver(const std::string& pci, const std::string& driver);

    // Contents of <root>/<relative> ("" when missing), e.g. "bus/pci/drivers/mlx5_core/unbind".
    std::string read(const std::string& relative) const;
    std::string function_dir(const std::string& pci) const;

    // ---- additions by other features below ----

    // A software RDMA device (rxe, siw): no parent function, port 1 over `netdev` (what
    // class/infiniband/<name>/ports/1/gid_attrs/ndevs/0 shows for `rdma link add <name> type rxe
    // netdev <netdev>`), ACTIVE, Ethernet link layer.
    void add_soft_rdma_device(const std::string& name, const std::string& netdev);

private:
    void write_file(const std::string& relative, const std::string& content) const;
    std::string root_;
};

}  // namespace rdmanet::test
