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
};

std::span<const ModeEntry> mode_entries();
// nullptr for a name no entry has (a typo, or an attachment state written by another version).
const ModeEntry* find_mode_entry(std::string_view name);
// Throws std::logic_error for an unknown name: for callers whose name was already validated.
const ModeEntry& mode_entry(std::string_view name);
// Every entry's name, in table order (node policy validation, error messages).
std::vector<std::string_view> mode_names();

}  // namespace rdmanet::cni
