#pragma once
// mode "sriov": the pieces of the SR-IOV VF backend, each in its own file (cni/modes/sriov/):
// VF discovery through sysfs, the per-VF lock and in-use record, the PF-side settings plan,
// InfiniBand GUIDs and the Multus device-info file. The mode's settings and its entry points
// (sriov_add/del/check) are in mode.hpp.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/modes/sriov/mode.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/modes/sriov/state.hpp"
#include "rdmanet/base/fd.hpp"
#include "rdmanet/netns/sysfs.hpp"
#include "rdmanet/netns/vf.hpp"

namespace rdmanet::cni {

// ---- discovery (device.cpp) ----------------------------------------------------------

// A VF as sysfs describes it: <root>/bus/pci/devices/<pci>/{physfn,driver,net/,infiniband/}.
struct VfDevice {
    std::string pci;                    // VF PCI address
    std::string pf_pci;                 // basename of physfn
    std::string pf;                     // PF netdev: first entry of physfn/net/
    unsigned index = 0;                 // i where physfn/virtfn<i> -> pci
    std::string driver;                 // bound driver, "" when unbound
    bool userspace = false;             // vfio-pci, uio_pci_generic, igb_uio: DPDK mode
    std::optional<std::string> netdev;  // VF netdev in the host, when it has one there
    bool infiniband = false;            // PF's link type is InfiniBand (class/net/<pf>/type 32)
};

bool is_userspace_driver(const std::string& driver);

// Resolves `pci` (already validated as a PCI address). Throws Error:
//   device_not_found (101) when no such PCI device exists, when its PF has no netdev (after a
//   reboot physfn/net may be missing until the VFs are recreated, sriov-cni #178), or when the
//   VF is bound to a kernel driver but has no netdev in the host (unbound, or in another netns);
//   invalid_config (7) when the device is not a VF (no physfn: a PF or a plain function).
// With require_netdev false a kernel-driver VF without a host netdev is returned with netdev
// nullopt (the caller checks ownership first, so a VF held by another pod gets code 102).
VfDevice find_vf(const netns::Sysfs& sysfs, const std::string& pci, bool require_netdev = true);
// The device_not_found error for a kernel-driver VF without a netdev in the host.
Error missing_netdev_error(const VfDevice& vf);

// The VF's host netdev by PCI address, now (after a rebind or when the kernel returned it under
// another name). nullopt when it has none in the host.
std::optional<std::string> vf_netdev(const netns::Sysfs& sysfs, const std::string& pci);

// PCI vendor id without "0x" ("15b3") from bus/pci/devices/<pci>/vendor; "" when unknown.
std::string pci_vendor_id(const netns::Sysfs& sysfs, const std::string& pci);

// ---- ownership (lock.cpp) -------------------------------------------------------------

// An exclusive flock on <dir>/<name>.lock, taken with a bounded wait and released on
// destruction (or process exit). Error(timeout, 104) naming what holds it when the wait ends.
class FileLock {
public:
    static FileLock acquire(const std::string& dir, const std::string& name, std::chrono::milliseconds timeout,
                            const std::string& what);
    FileLock(FileLock&&) = default;
    FileLock& operator=(FileLock&&) = default;

private:
    explicit FileLock(base::UniqueFd fd) : fd_(std::move(fd)) {}
    base::UniqueFd fd_;
};

inline constexpr std::chrono::seconds kVfLockTimeout{60};  // sriov-cni PR #313
inline constexpr std::chrono::seconds kGuidLockTimeout{60};

// Directory of the sriov bookkeeping below the state dir: <state_dir>/sriov.
std::string sriov_dir(const std::string& state_dir);

// Who holds a VF: <state_dir>/sriov/pci/<pci>.
struct VfOwner {
    std::string network, container_id, ifname, netns;
    friend bool operator==(const VfOwner&, const VfOwner&) = default;
};

class InUseRecords {
public:
    explicit InUseRecords(std::string state_dir) : dir_(sriov_dir(state_dir) + "/pci") {}
    std::optional<VfOwner> read(const std::string& pci) const;
    void write(const std::string& pci, const VfOwner& owner) const;  // atomic, 0600
    void remove(const std::string& pci) const;                       // ENOENT is fine
    // ADD's claim: refuses (device_busy, 102) a VF recorded for another attachment whose netns
    // still exists; a record whose netns is gone is stale and removed (logged); then records
    // `owner`. Returns true when a record for `owner` itself already existed (a retried ADD).
    bool claim(const std::string& pci, const VfOwner& owner) const;

private:
    std::string dir_;
};

// ---- PF-side settings (settings.cpp): pure --------------------------------------------

// The changes ADD makes on the PF, in sriov-cni's order: vlan -> MAC -> rate -> spoofchk ->
// trust -> link_state. `mac` is the requested MAC (config/runtime/CNI_ARGS), if any.
// InfiniBand VFs get neither VLAN nor MAC (Error invalid_config when the config asks for them).
std::vector<netns::VfChange> plan_apply(const SriovConf& conf, const std::optional<std::string>& mac, unsigned vf,
                                        bool infiniband);
// Field name of a change as recorded in SriovState::applied ("vlan", "mac", ...).
std::string field_name(netns::VfChange::Field field);
// The change that puts `field` back to `original` (the VF as read before ADD); nullopt for a
// field that cannot be restored because the driver never reported it (spoofchk/trust unknown).
// An all-zero original MAC is written back as zeros, which clears the admin MAC.
std::optional<netns::VfChange> restore_change(const std::string& field, const netns::VfInfo& original, unsigned vf);
// True when `vf` shows the value `change` set (used to verify the MAC, and by CHECK).
bool reflects(const netns::VfInfo& vf, const netns::VfChange& change);

// Applies `change`, and for a MAC re-reads the VF until it shows it (attempts x interval, as
// sriov-cni: 20 x 100 ms). Error(kernel_failure) when it never does.
void apply_verified(netns::VfControl& vfs, const std::string& pf, const netns::VfChange& change, int attempts = 20,
                    std::chrono::milliseconds interval = std::chrono::milliseconds(100));

// ---- InfiniBand GUID (guid.cpp) ------------------------------------------------------

// The VF's current GUID: the PF's IFLA_VF_IB_NODE_GUID report when present, else the last 8
// bytes of the VF netdev's 20-byte IPoIB address (`hwaddr`, as rtnetlink formats it); "" when
// neither is known.
std::string current_guid(const netns::VfInfo& vf, const std::string& hwaddr);
bool is_reserved_guid(const std::string& guid);  // all zeros or all ones
// Node GUID then port GUID on the PF.
void set_vf_guid(netns::VfControl& vfs, const std::string& pf, unsigned vf, const std::string& guid);
// Unbind + bind the VF's driver through sysfs (<root>/bus/pci/drivers/<driver>/{unbind,bind}) so
// that a new GUID takes effect. Skipped for vfio-pci (the guest driver reads it). Throws
// KernelError with the write's errno.
void rebind_vf(const netns::Sysfs& sysfs, const std::string& pci, const std::string& driver);

// ---- Multus device-info file (device_info.cpp) ---------------------------------------

// {"type":"pci","version":"1.1.0","pci":{"pci-address","rdma-device","pf-pci-address"}}, merged
// into what the file already holds (the device plugin's copy may carry more keys), written
// atomically (temp + rename, 0600). rdma-device and pf-pci-address are omitted when empty (a
// function that is not a VF has no PF). Also used by hostdev for PCI netdevs.
// `allowed_dirs` is the node policy's deviceInfoDirs: `path` must lie below one of them (code 7
// otherwise), and nothing below that directory is followed if it is a symlink (code 5).
void write_device_info(const std::vector<std::string>& allowed_dirs, const std::string& path, const std::string& pci,
                       const std::string& pf_pci, const std::string& rdma_device);
// The RDMA part of a device-info file written before (by write_device_info, or Multus' copy of
// the device plugin's): pci.rdma-device = `rdma_device` (the name the pod sees) and the
// extension pci.roce-gids = `roce_gids` ([{"address","gid","port","index"}], the RoCE v2 GID of
// each pod address). Nothing is written when the file does not exist (no file was asked for, or
// the device is not a PCI function). Same confinement and errors as write_device_info.
void add_rdma_to_device_info(const std::vector<std::string>& allowed_dirs, const std::string& path,
                             const std::string& rdma_device, const nlohmann::json& roce_gids);
// Missing is fine; a path outside `allowed_dirs` (recorded under another policy) is left alone
// with a warning. Never throws: it runs in DEL and in rollbacks.
void remove_device_info(const std::vector<std::string>& allowed_dirs, const std::string& path);

}  // namespace rdmanet::cni
