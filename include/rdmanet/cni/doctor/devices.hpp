#pragma once
// rdmanetctl devices [--sysfs-root DIR] [--no-verbs]: an ibdev2netdev/ibstat-like table of the
// node's RDMA devices from sysfs and libibverbs (cni/cli/rdma.hpp reads the verbs). Returns the
// exit status; the table on `out`.
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "rdmanet/cni/cli/rdma.hpp"
#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::cni::doctor {

// One line of `rdmanetctl devices`.
struct DeviceRow {
    std::string device, state, link_layer, netdev, pci, function;  // function: PF | VF | SF | -
    unsigned port = 0;
};

// Rows from sysfs (every device in class/infiniband, its ports, netdevs and parent function),
// with state/link layer from `verbs` where it has the port (libibverbs is the authority on a
// live node), plus verbs-only ports. Sorted by device and port. Pure apart from sysfs reads.
std::vector<DeviceRow> device_rows(const netns::Sysfs& sysfs, const std::vector<cli::VerbsPort>& verbs);
// ibdev2netdev/ibstat-like aligned table with a header line.
std::string format_device_table(const std::vector<DeviceRow>& rows);

struct DevicesOptions {
    std::string sysfs_root = "/sys";
    bool verbs = true;  // ask libibverbs too (always off for a sysfs root other than /sys)
};
// Zero devices is not an error: a line explaining where RDMA devices come from, exit 0.
int devices(const DevicesOptions& options, const std::function<std::vector<cli::VerbsPort>()>& verbs, std::ostream& out,
            std::ostream& err);

}  // namespace rdmanet::cni::doctor
