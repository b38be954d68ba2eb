#pragma once
// The modes rdmanet knows, one entry each, looked up by name (iproute2's table of link kinds is
// the model): the name the configuration's "mode" and the attachment state use, the parser of
// the mode's own keys, and its ADD/DEL/CHECK. Nothing else in the plugin knows a mode by name:
// adding one is a folder cni/modes/<mode>/ and a line in registry.cpp.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/cni/config/mode_keys.hpp"
#include "rdmanet/cni/modes/backend.hpp"

namespace rdmanet::cni {

// What the pod's interface is. A child link is created by the mode on the host's "master" and
// dies with the pod's namespace (macvlan, IPoIB child); a host device is one the node already has
// (a netdev, a PCI function, an SR-IOV VF), handed out by a device plugin or a ResourceClaim,
// moved into the pod and back: Multus must pass it deviceID and CNIDeviceInfoFile.
enum class ModeLink { child_of_master, host_device };

// What becomes of the RDMA device behind the interface. A child link's stays its master's:
// shared with the host and every pod on that master, in either RDMA netns mode. A host device's
// moves into the pod with the netdev when the node runs the exclusive RDMA netns mode (isolated),
// and stays visible to every namespace in shared mode.
enum class ModeRdma { shared_with_host, isolated_in_exclusive_mode };

// The wording of these properties wherever rdmanet prints them (README.md's mode table carries
// the same words; a unit test holds the two together).
std::string_view describe(ModeLink link);
std::string_view describe(ModeRdma rdma);

struct ModeEntry {
    std::string_view name;
    std::unique_ptr<ModeSettings> (*parse)(const ModeKeys&);
    PodLink (*add)(const AddRequest&);
    void (*del)(const DelRequest&);
    void (*check)(const CheckRequest&);
    ModeLink link;
    ModeRdma rdma;
    // One line for help texts and the plugin's about string.
    std::string_view help;

    bool takes_host_device() const { return link == ModeLink::host_device; }
};

std::span<const ModeEntry> mode_entries();
// nullptr for a name no entry has (a typo, or an attachment state written by another version).
const ModeEntry* find_mode_entry(std::string_view name);
// Throws std::logic_error for an unknown name: for callers whose name was already validated.
const ModeEntry& mode_entry(std::string_view name);
// Every entry's name, in table order (node policy validation, error messages).
std::vector<std::string_view> mode_names();
// The names joined with ", " in table order ("macvlan, hostdev, ...").
std::string mode_list();
// The names of the entries with that RDMA property, joined with ", " in table order.
std::string mode_list(ModeRdma rdma);

}  // namespace rdmanet::cni
