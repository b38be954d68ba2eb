#pragma once
// The modes rdmanet knows, one entry each, looked up by name (iproute2's table of link kinds is
// the model). The plugin's ADD/DEL/CHECK flow calls a mode only through its entry.
#include <optional>
#include <span>
#include <string_view>

#include "rdmanet/cni/modes/backend.hpp"

namespace rdmanet::cni {

struct ModeEntry {
    Mode mode;
    std::string_view name;   // the config's "mode" value and the attachment state's record
    PodLink (*add)(const AddRequest&);
    void (*del)(const DelRequest&);
    void (*check)(const CheckRequest&);
};

std::span<const ModeEntry> mode_entries();
const ModeEntry& mode_entry(Mode mode);
// nullopt for a name no entry has (an attachment state written by a newer or older version).
const ModeEntry* find_mode_entry(std::string_view name);

}  // namespace rdmanet::cni
