#pragma once
// Fakes for the kernel parts the development kernel lacks, modelling the kernel's semantics
// (drivers/infiniband/core/{device,nldev}.c; for IPoIB, drivers/infiniband/ulp/ipoib):
//
// FakeRdmaKernel: one "kernel" with RDMA devices owned by network namespaces (identified by the
// nsfs inode of an fd, so real namespaces and test tokens work alike).
//   - netns mode shared by default; SYS_SET to the current mode is a no-op; to the other mode
//     EBUSY while any namespace other than the initial one is registered as existing;
//   - GET lists every device in shared mode, only the namespace's own in exclusive mode;
//   - SET+NET_NS_FD: EINVAL for an index the caller's namespace does not see, EOPNOTSUPP in
//     shared mode or for a device that cannot disassociate (rxe); else the device changes owner
//     and disappears from the old namespace's view (and, with a sysfs hook, from its sysfs);
//   - SET+DEV_NAME (rename): EINVAL for an empty name or an index the caller does not see; the
//     current name is a no-op; EEXIST when any device of the node has the name, whatever
//     namespace holds it (ib_device_rename checks every device); the new name is what every view
//     that sees the device lists from then on.
//   - a software device bound to a netdev (rxe; bind_to_netdev) is deleted by its driver when that
//     netdev leaves the initial namespace (NETDEV_UNREGISTER), wherever the RDMA device is: it
//     vanishes from every view, and on_deleted lets a fake sysfs tree drop it too. The fake checks
//     the netdev (a real one, through netdev_in_init) before answering each request.
// The same scenarios (rdma_scenarios.hpp) run against this fake and the real kernel in the lab.
//
// StandInIpoibLinks: IPoIB child creation on a kernel without IPoIB: validates like the kernel
// (pkey 0/0x8000 EINVAL, parent must exist) and creates a macvlan of the same name on the parent
// (a veth end), so that the move/rename/delete around it run on the real kernel.
#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/netns/ipoib.hpp"
#include "rdmanet/netns/namespace.hpp"
#include "rdmanet/netns/rdma.hpp"
#include "rdmanet/netns/rtnl.hpp"

namespace rdmanet::test {

// Identity of the namespace (or token) an fd refers to.
ino_t netns_id_of_fd(int fd);

class FakeRdmaKernel {
public:
    // The namespace of the calling thread is the initial one ("init_net").
    FakeRdmaKernel();
    // `init_id` (netns_id_of_fd of a test's "host" namespace) is the initial one.
    explicit FakeRdmaKernel(ino_t init_id) : init_(init_id) {}

    // Adds a device owned by the initial namespace; returns its index (1, 2, ...).
    std::uint32_t add_device(const std::string& name, bool can_disassociate = true);
    // The mode as if set at boot (module parameter): no EBUSY check.
    void boot_mode(netns::RdmaNetnsMode mode) { mode_ = mode; }
    netns::RdmaNetnsMode mode() const { return mode_; }

    // The device is soft-RoCE over `netdev` (a name in the initial namespace): it is deleted once
    // netdev_in_init(netdev) answers false. Linux 7.x lets rxe move (can_disassociate); 6.1 not.
    void bind_to_netdev(const std::string& device, const std::string& netdev);
    std::function<bool(const std::string& netdev)> netdev_in_init;
    std::function<void(const std::string& device)> on_deleted;
    // Whether the device still exists (in any namespace).
    bool exists(const std::string& name) const;

    // Namespaces other than the initial one that exist (SYS_SET's EBUSY condition).
    void netns_created(ino_t id) { others_.push_back(id); }
    void netns_destroyed(ino_t id);  // also returns its devices to the initial namespace

    // A view (socket) from the namespace `id` / of `ns` / of the calling thread.
    std::unique_ptr<netns::RdmaNetlink> open_view(ino_t id);
    std::unique_ptr<netns::RdmaNetlink> open_in(const netns::NetNamespace& ns) {
        return open_view(netns_id_of_fd(ns.fd()));
    }

    ino_t init_id() const { return init_; }
    // Owner namespace of a device by name; 0 when unknown.
    ino_t owner_of(const std::string& name) const;
    // Whether a view from namespace `id` lists the device `name` (not logged as a call).
    bool visible_in(const std::string& name, ino_t id) const;
    // Every request as "sys_get", "sys_set exclusive", "get", "move rxe0" (in order).
    const std::vector<std::string>& calls() const { return calls_; }
    // Called when a device leaves (false) or returns to (true) the initial namespace, e.g. to
    // remove/restore it in a fake sysfs tree as the kernel's host view does.
    std::function<void(const std::string& device, bool in_init_ns)> on_host_visibility;
    // Called after a rename, e.g. to rename the device's entries in a fake sysfs tree.
    std::function<void(const std::string& from, const std::string& to)> on_rename;

    // The mode and the devices as JSON, and back (the file-backed fake of the test-only plugin
    // binary, support/fake_kernel_file.hpp): {"mode": "shared"|"exclusive", "devices": [{"index",
    // "name", "canDisassociate", "owner", "boundNetdev"}]}, owner 0 = the initial namespace, else
    // the nsfs inode; boundNetdev only for a device bound to a netdev (bind_to_netdev).
    // The calls log and the registered namespaces are not part of it.
    nlohmann::json to_json() const;
    void load_json(const nlohmann::json& j);
    // The kernel returns the devices of a namespace that died to the initial one: every owner not
    // in `live` (nsfs inodes of the namespaces that exist) is treated as destroyed.
    void reap_dead_namespaces(const std::vector<ino_t>& live);

private:
    friend class FakeRdmaView;
    struct Device {
        std::uint32_t index;
        std::string name;
        bool can_disassociate;
        ino_t owner;
        std::string bound_netdev;  // "" = a hardware device
    };
    // The driver's NETDEV_UNREGISTER: deletes bound devices whose netdev has left.
    void run_netdev_notifier();
    ino_t init_;
    netns::RdmaNetnsMode mode_ = netns::RdmaNetnsMode::shared;
    std::vector<ino_t> others_;
    std::vector<Device> devices_;
    std::vector<std::string> calls_;
};

class StandInIpoibLinks final : public netns::IpoibLinks {
public:
    // `rtnl` is the namespace children are created in (the host's).
    explicit StandInIpoibLinks(netns::Rtnl& rtnl) : rtnl_(rtnl) {}
    void create(const netns::IpoibSpec& spec) override;
    std::string kind() const override { return "macvlan"; }
    const std::vector<netns::IpoibSpec>& created() const { return created_; }

private:
    netns::Rtnl& rtnl_;
    std::vector<netns::IpoibSpec> created_;
};

}  // namespace rdmanet::test
