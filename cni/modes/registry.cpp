#include "rdmanet/cni/modes/registry.hpp"

#include <stdexcept>

namespace rdmanet::cni {

namespace {

// One line per mode: its functions live in cni/modes/<name>/.
constexpr ModeEntry kModes[] = {
    {Mode::macvlan, "macvlan", macvlan_add, macvlan_del, macvlan_check},
    {Mode::hostdev, "hostdev", hostdev_add, hostdev_del, hostdev_check},
    {Mode::sriov, "sriov", sriov_add, sriov_del, sriov_check},
    {Mode::ipoib, "ipoib", ipoib_add, ipoib_del, ipoib_check},
};

}  // namespace

std::span<const ModeEntry> mode_entries() { return kModes; }

const ModeEntry& mode_entry(Mode mode) {
    for (const auto& entry : kModes)
        if (entry.mode == mode) return entry;
    throw std::logic_error("mode without a registry entry");
}

const ModeEntry* find_mode_entry(std::string_view name) {
    for (const auto& entry : kModes)
        if (entry.name == name) return &entry;
    return nullptr;
}

}  // namespace rdmanet::cni
