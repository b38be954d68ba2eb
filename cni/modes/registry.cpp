#include "rdmanet/cni/modes/registry.hpp"

#include <stdexcept>

#include "rdmanet/cni/modes/hostdev/mode.hpp"
#include "rdmanet/cni/modes/ipoib/mode.hpp"
#include "rdmanet/cni/modes/macvlan/mode.hpp"
#include "rdmanet/cni/modes/sriov/mode.hpp"

namespace rdmanet::cni {

namespace {

// One line per mode: its functions live in cni/modes/<name>/.
constexpr ModeEntry kModes[] = {
    {"macvlan", parse_macvlan_conf, macvlan_add, macvlan_del, macvlan_check},
    {"hostdev", parse_hostdev_conf, hostdev_add, hostdev_del, hostdev_check},
    {"sriov", parse_sriov_conf, sriov_add, sriov_del, sriov_check},
    {"ipoib", parse_ipoib_conf, ipoib_add, ipoib_del, ipoib_check},
};

}  // namespace

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

}  // namespace rdmanet::cni
