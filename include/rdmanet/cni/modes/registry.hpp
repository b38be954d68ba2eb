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

struct ModeEntry {
    std::string_view name;
    std::unique_ptr<ModeSettings> (*parse)(const ModeKeys&);
    PodLink (*add)(const AddRequest&);
    void (*del)(const DelRequest&);
    void (*check)(const CheckRequest&);
    // The mode takes a device of the host (a PCI function handed out by a device plugin) rather
    // than creating a virtual child: Multus must pass it deviceID and CNIDeviceInfoFile.
    bool takes_host_device;
    // One line for help texts and the plugin's about string.
    std::string_view help;
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

}  // namespace rdmanet::cni
