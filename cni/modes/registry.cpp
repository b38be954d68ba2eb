#include "rdmanet/cni/modes/registry.hpp"

#include <stdexcept>

#include "rdmanet/cni/modes/hostdev/mode.hpp"
#include "rdmanet/cni/modes/ipoib/mode.hpp"
#include "rdmanet/cni/modes/macvlan/mode.hpp"
#include "rdmanet/cni/modes/sriov/mode.hpp"

namespace rdmanet::cni {

namespace {

using enum ModeLink;
using enum ModeRdma;

// One line per mode: its functions live in cni/modes/<name>/.
constexpr ModeEntry kModes[] = {
    {"macvlan", parse_macvlan_conf, macvlan_add, macvlan_del, macvlan_check, child_of_master, shared_with_host,
     "a macvlan child of a host interface (\"master\"), created in the pod"},
    {"hostdev", parse_hostdev_conf, hostdev_add, hostdev_del, hostdev_check, host_device, isolated_in_exclusive_mode,
     "a host netdev (or PCI function) moved into the pod as it is"},
    {"sriov", parse_sriov_conf, sriov_add, sriov_del, sriov_check, host_device, isolated_in_exclusive_mode,
     "an SR-IOV VF configured from its PF (MAC, VLAN, rate, trust, GUID) and moved into the pod"},
    {"ipoib", parse_ipoib_conf, ipoib_add, ipoib_del, ipoib_check, child_of_master, shared_with_host,
     "an IPoIB child of an InfiniBand interface (\"master\"), created on the host and moved"},
};
}  // namespace

std::string_view describe(ModeLink link) {
    switch (link) {
    case child_of_master: return "a child of the node's `master`";
    case host_device: return "a host device, moved in and back";
    }
    return "";
}

std::string_view describe(ModeRdma rdma) {
    switch (rdma) {
    case shared_with_host: return "shared with the host";
    case isolated_in_exclusive_mode: return "moves with it in exclusive mode";
    }
    return "";
}

std::span<const ModeEntry> mode_entries() { return kModes; }

const ModeEntry* find_mode_entry(std::string_view name) {
    for (const auto& entry : kModes)
        if (entry.name == name) return &entry;
    return nullptr;
}

const ModeEntry& mode_entry(std::string_view name) {
    if (const auto* entry = find_mode_entry(name)) return *entry;
    throw std::logic_error("mode without a registry entry: " + std::string(name));
}

std::vector<std::string_view> mode_names() {
    std::vector<std::string_view> names;
    for (const auto& entry : kModes) names.push_back(entry.name);
    return names;
}

std::string mode_list() {
    std::string list;
    for (const auto& entry : kModes) list += (list.empty() ? "" : ", ") + std::string(entry.name);
    return list;
}

std::string mode_list(ModeRdma rdma) {
    std::string list;
    for (const auto& entry : kModes)
        if (entry.rdma == rdma) list += (list.empty() ? "" : ", ") + std::string(entry.name);
    return list;
}

}  // namespace rdmanet::cni
