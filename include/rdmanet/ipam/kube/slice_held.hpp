#pragma once
// The node's record of the slices it holds, one file per NodeSlicePool and node name:
// <slices dir>/held/<NodeSlicePool>@<node>.json =
//   {"range": "10.10.0.0/16", "sliceSize": "/25", "slices": [..], "revoked": [..]}
// "slices" are the slices this node claimed; "revoked" those of them the NodeSlicePool no longer
// gives to this node (found after an outage), never allocated from again. Written by the
// node-slice store (slice_store.hpp), read by it and by rdmanetctl (pool slices, doctor).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rdmanet/base/ip.hpp"

namespace rdmanet::ipam::kube {

struct HeldSlices {
    std::string pool_name;   // the NodeSlicePool
    std::string node;        // the node name the slices were claimed under
    std::string range;       // the range as written ("" when the file has none)
    std::string slice_size;  // "/25"
    std::vector<base::IpNetwork> slices;
    std::vector<base::IpNetwork> revoked;

    // `slices` minus `revoked`: what the node may allocate from.
    std::vector<base::IpNetwork> usable() const;
    bool is_revoked(const base::IpNetwork& slice) const;
};

std::string held_file_path(const std::string& slices_dir, const std::string& pool_name, const std::string& node);

// Reads one held file; nullopt when it does not exist. Throws IpamError(io_failure) when it is not
// a JSON object. Does not check range or slice size against any configuration.
std::optional<HeldSlices> read_held_file(const std::string& slices_dir, const std::string& pool_name,
                                         const std::string& node);
// Writes it atomically (0600). Throws IpamError(io_failure).
void write_held_file(const std::string& slices_dir, const HeldSlices& held);
// The (NodeSlicePool, node) of every held file of the slices directory, sorted; none when the
// directory does not exist. Files whose name is not <pool>@<node>.json are skipped.
std::vector<std::pair<std::string, std::string>> held_file_names(const std::string& slices_dir);
// Every held file, read, in that order. Throws IpamError(io_failure) on the first unreadable one.
std::vector<HeldSlices> list_held_files(const std::string& slices_dir);

}  // namespace rdmanet::ipam::kube
