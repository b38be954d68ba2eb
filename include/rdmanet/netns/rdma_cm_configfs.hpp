#pragma once
// rdma_cm's configfs (drivers/infiniband/core/cma_configfs.c): per-device defaults of the RDMA
// connection manager, here the RoCE type of service every rdma_cm connection of a device starts
// with (what lossless RoCE fabrics classify on: PFC/ECN). `mkdir <root>/rdma_cm/<dev>` makes the
// device's group and the kernel fills in ports/<n>/default_roce_tos, a decimal u8.
//
// The values live in the device's rdma_cm client, which the kernel destroys and re-creates when
// the device moves to another network namespace (ib_core re-registers every client), so a move
// resets them to 0; the group itself is looked up by device name and not per
// namespace, so the host can set the value of a device that now lives in a pod.
#include <optional>
#include <string>

namespace rdmanet::netns {

class RdmaCmConfigfs {
public:
    // `root`: where configfs is mounted (tests point it at a directory tree).
    explicit RdmaCmConfigfs(std::string root = "/sys/kernel/config") : root_(std::move(root)) {}

    const std::string& root() const { return root_; }
    // <root>/rdma_cm exists: configfs is mounted and rdma_cm is loaded.
    bool available() const;
    // Creates the device's group when missing and writes `tos` to every port's
    // default_roce_tos; returns the number of ports written (0 = the device has no port group).
    // Throws KernelError (with errno) on a failed mkdir/write, std::invalid_argument for a device
    // name that cannot be a path component.
    unsigned set_default_roce_tos(const std::string& device, unsigned char tos) const;
    // The value of one port; nullopt when the group or the port does not exist.
    std::optional<unsigned> default_roce_tos(const std::string& device, unsigned port) const;

private:
    std::string device_dir(const std::string& device) const;
    std::string root_;
};

}  // namespace rdmanet::netns
