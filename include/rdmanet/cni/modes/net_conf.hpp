#pragma once
// The plugin's whole network configuration (stdin): the keys every mode shares, read by
// cni/config, then "mode" and that mode's own keys, read by the mode's registry entry. Pure: no I/O.
#include <string_view>

#include "rdmanet/cni/config/config.hpp"

namespace rdmanet::cni {

// Parses and validates stdin for `command`. Errors: decode failure (6) for JSON that does not
// parse (or nests too deep) or is not an object; invalid config (7) for a known key of the wrong
// JSON type or with a bad value (unknown mode, missing master or device, bad MAC, bad name,
// CHECK without prevResult); incompatible version (1) for a missing or unsupported cniVersion or
// a verb the version does not have (CHECK < 0.4.0, GC/STATUS < 1.1.0). The message names the key
// and what to write instead. Unknown keys are ignored (Multus and libcni inject some).
// Only ADD and CHECK are strict. DEL, GC, STATUS (and VERSION/none, should a caller pass them)
// are lenient: only cniVersion and name must be valid and every other key is best effort (a bad
// one keeps its default, a missing or unknown mode leaves `mode` empty and no settings), so an attachment can always be
// torn down even if its config has since become invalid. GC alone still rejects a malformed
// cni.dev/valid-attachments, because guessing there could release live attachments.
// Normalised on the way in: MACs, GUIDs and PCI addresses are lower-cased; a plain decimal
// deviceID (the RDMA shared device plugin's "0".."N-1") is not a device and is skipped.
NetConf parse_net_conf(std::string_view stdin_bytes, Command command);

}  // namespace rdmanet::cni
