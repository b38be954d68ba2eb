#pragma once
// The GID table of an RDMA device as sysfs shows it:
//   class/infiniband/<dev>/ports/<p>/gids/<i>              "0000:0000:0000:0000:0000:ffff:c0a8:6401"
//   class/infiniband/<dev>/ports/<p>/gid_attrs/types/<i>   "RoCE v2" | "IB/RoCE v1"
// For RoCE the kernel fills the table from the addresses of the device's netdev: an IPv4
// address a.b.c.d gives the GID ::ffff:a.b.c.d, an IPv6 address the address itself, one entry
// per RoCE version the device supports. Unused slots read as all zeros (or fail to read).
//
// sysfs' class/infiniband is tagged with the network namespace: in exclusive RDMA netns mode a
// device inside a pod is visible only in a sysfs mounted from the pod's namespace, never in the
// host's /sys. with_netns_sysfs() gives such a view.
#include <functional>
#include <string>
#include <vector>

#include "rdmanet/netns/namespace.hpp"
#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::netns {

struct RdmaGidEntry {
    unsigned port = 0;
    unsigned index = 0;
    std::string gid;   // as sysfs prints it: 8 groups of 4 lower-case hex digits
    std::string type;  // gid_attrs/types/<i>, "" when unreadable
    friend bool operator==(const RdmaGidEntry&, const RdmaGidEntry&) = default;
};

struct RdmaGidTable {
    bool exists = false;                // class/infiniband/<device> is in this view
    bool roce = false;                  // some port's link_layer is Ethernet (InfiniBand GIDs are not IP-based)
    std::vector<RdmaGidEntry> entries;  // used entries of every port, by port then index
};

// The table of `device` under sysfs.root(); `exists` false when this view has no such device
// (or the name is not a plain name).
RdmaGidTable read_gid_table(const Sysfs& sysfs, const std::string& device);

// Runs `fn` with a Sysfs whose root is a sysfs mounted from inside `ns`, in a short-lived thread
// that has its own mount namespace (so the mount is private to it and vanishes with it; the
// calling thread, the host's /sys and other processes are untouched). Throws KernelError when
// the thread cannot unshare, enter `ns` or mount sysfs; rethrows what `fn` throws.
void with_netns_sysfs(const NetNamespace& ns, const std::function<void(const Sysfs&)>& fn);

}  // namespace rdmanet::netns
