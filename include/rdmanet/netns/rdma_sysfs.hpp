#pragma once
// RDMA devices as sysfs shows them, under Sysfs::root() so tests can build a
// fake tree:
//   bus/pci/devices/<pci>/infiniband/<dev>              RDMA device(s) of a PCI function
//   bus/auxiliary/devices/<aux>/infiniband/<dev>        ... of an auxiliary device (SF)
//   class/infiniband/<dev>/ports/<n>/{state,link_layer,gid_attrs/ndevs/<i>}
//   class/infiniband/<dev>/{device -> PCI/aux device, node_guid}
// In exclusive RDMA netns mode a device inside a pod vanishes from all of these in the host.
#include <optional>
#include <string>
#include <vector>

#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::netns {

// Sorted names; empty when the function has none or does not exist.
std::vector<std::string> pci_rdma_devices(const Sysfs& sysfs, const std::string& pci);
std::vector<std::string> aux_rdma_devices(const Sysfs& sysfs, const std::string& aux_id);
// Every RDMA device in class/infiniband, sorted.
std::vector<std::string> rdma_devices(const Sysfs& sysfs);

// The RDMA device(s) carrying a netdev: those whose port GID table names it
// (ports/*/gid_attrs/ndevs/*, how RoCE devices incl. rxe are found), else those of the
// netdev's parent device (class/net/<if>/device -> .../infiniband/, how an IPoIB netdev or a
// RoCE port without GIDs yet is found). Sorted, unique.
std::vector<std::string> netdev_rdma_devices(const Sysfs& sysfs, const std::string& ifname);

struct RdmaPortSysfs {
    unsigned port = 0;
    std::string state;                 // "ACTIVE" from "4: ACTIVE"
    std::string link_layer;            // "Ethernet" | "InfiniBand"
    std::vector<std::string> netdevs;  // unique names from gid_attrs/ndevs/*
};

struct RdmaDeviceSysfs {
    std::string name;
    std::string parent;  // PCI address or auxiliary id (basename of device ->), "" for rxe
    bool is_vf = false;  // the PCI parent has a physfn link
    std::string pf;      // the PF's PCI address for a VF
    std::string node_guid;
    std::vector<RdmaPortSysfs> ports;
};
// nullopt when class/infiniband/<name> does not exist.
std::optional<RdmaDeviceSysfs> read_rdma_device(const Sysfs& sysfs, const std::string& name);

// A software RDMA device bound to a netdev rather than to a device of its own: soft-RoCE (rxe,
// `rdma link add ... type rxe netdev X`) registers with no parent device, so its
// class/infiniband/<name> has no `device` link (hardware RDMA devices always have one: the PCI
// function or auxiliary SF). Its driver deletes it when the netdev leaves its network namespace
// (NETDEV_UNREGISTER), so moving that netdev into a pod destroys the device, wherever the RDMA
// device itself is. siw over a netdev that has a parent device links to that parent and is not
// recognised here; the end-of-ADD ownership check still catches it. False when the device does
// not exist in this sysfs view.
bool rdma_device_bound_to_netdev(const Sysfs& sysfs, const std::string& name);

}  // namespace rdmanet::netns
