#pragma once
// What DEL needs to undo an attachment, one JSON file per (network, container id, ifname).
// Written atomically and durably (base::write_file_atomically: temp file, fsync, rename, fsync of
// the directory), so a crash or power loss leaves either the old or the new state. The kernel
// objects it describes do not survive a power loss, but the IPAM allocations made for them do:
// after the reboot, the node agent reads this file (the network configuration below) to release
// the allocations of sandboxes whose DEL never comes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/base/fd.hpp"

namespace rdmanet::cni {

struct NodePolicy;

struct AttachmentState {
    std::string network;
    std::string container_id;
    std::string ifname;
    std::string mode;   // the mode's registry name
    std::string netns;  // CNI_NETNS at ADD
    // The pod namespace's identity at ADD (st_dev/st_ino of the nsfs file behind CNI_NETNS, 0 when
    // unknown): the node agent treats the sandbox as gone when the path is gone or now names a
    // different namespace (a runtime reusing the path for a new pod).
    std::uint64_t netns_dev = 0;
    std::uint64_t netns_inode = 0;
    // What a DEL needs when the runtime never sends it: the network configuration the plugin got
    // on stdin, CNI_ARGS and CNI_PATH (for a delegated IPAM plugin). Null/empty in states written
    // before the agent existed; those can still be cleaned by a runtime DEL, not by the agent.
    nlohmann::json netconf;
    std::string cni_args;
    std::vector<std::string> cni_path;
    std::optional<std::string> nodename;  // $NODENAME at ADD: the node slice its IPAM used
    bool complete = false;                // false while ADD is still in progress (written before the move)

    // hostdev: the device's identity in the host, to return it or find it again.
    std::string host_ifname;  // original name in the host netns
    std::string host_mac;     // its MAC (identity when the name changed)
    std::string pci_address;  // PCI/aux id when known
    bool host_was_up = false;
    std::string host_alias;  // alias before we used it to record the host name

    // rdma.isolation: the RDMA device moved (or about to be moved) into the pod, by its host name;
    // empty when none. DEL moves it back only if the pod still owns it.
    std::string rdma_device;
    // rdma.deviceName: the name it was given inside the pod, "" when it kept its host name.
    // Recorded before the rename, so DEL and the node agent look for it under either name.
    std::string rdma_device_pod_name;
    // The RoCE v2 GIDs of the pod's addresses in that device's table at ADD
    // ([{"address", "gid", "port", "index"}]), for CHECK and the device-info file.
    nlohmann::json roce_gids = nlohmann::json::array();
    // The RDMA device's name as the pod sees it.
    const std::string& rdma_device_in_pod() const {
        return rdma_device_pod_name.empty() ? rdma_device : rdma_device_pod_name;
    }
    // ipoib: the link kind created for the pod ("ipoib"; a test stand-in's kind under fakes), so
    // that DEL deletes only what it created.
    std::string child_kind;

    // The mode's own record, opaque here (sriov: the VF, its PF and the settings to restore,
    // cni/modes/sriov/state.hpp); null when the mode keeps none. Stored in the file under the
    // mode's name, the key the sriov record always had.
    nlohmann::json mode_record;

    // The pod side beyond the interface (cni/pod/pod_plan.hpp's PodSetupRecord): the routing
    // table, the source rules and the sysctls' original values; null when nothing was changed.
    // Written before those changes are made.
    nlohmann::json pod_setup;

    // The result handed to the runtime (addresses etc.), in CNI 1.1.0 form.
    nlohmann::json result = nlohmann::json::object();
    std::string ipam_type;

    nlohmann::json to_json() const;
    static AttachmentState from_json(const nlohmann::json& j);
};

class StateStore {
public:
    // The node policy's stateDir; refusals (a symlinked dir) go to the policy's audit log. The
    // store keeps a reference: `policy` must outlive it.
    explicit StateStore(const NodePolicy& policy);
    const NodePolicy& policy() const { return policy_; }

    const std::string& dir() const { return dir_; }
    // Names are validated by the caller (network name, container id, ifname): no '/' possible.
    std::string path_for(const std::string& network, const std::string& container_id, const std::string& ifname) const;
    // Creates the directory (0700) when needed; the file is 0600.
    void save(const AttachmentState& state) const;
    // nullopt when missing; a corrupt file is treated as missing (logged) so DEL still succeeds.
    std::optional<AttachmentState> load(const std::string& network, const std::string& container_id,
                                        const std::string& ifname) const;
    void remove(const std::string& network, const std::string& container_id, const std::string& ifname) const;
    // Every readable state of `network` (for GC).
    std::vector<AttachmentState> list(const std::string& network) const;
    // Every readable state of every network (the node policy's "attached to another pod" check).
    std::vector<AttachmentState> list_all() const;

private:
    // O_NOFOLLOW fd of the directory (created 0700 when `create`); invalid when it does not
    // exist and !create. A symlinked state dir is refused (logged as a policy refusal).
    base::UniqueFd open_dir(bool create) const;

    const NodePolicy& policy_;
    std::string dir_;
};

}  // namespace rdmanet::cni
