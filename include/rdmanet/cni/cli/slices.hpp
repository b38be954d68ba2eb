#pragma once
// What a node holds in node-slice mode (node_slice_size, Kubernetes datastore) and what it has not
// published yet: read from the node's slices directory (<data_dir>/kubernetes/slices: held files,
// local store, backlog) and, when a kubeconfig is given, from the NodeSlicePools and slice
// IPPools. Shared by `rdmanetctl pool slices` and `rdmanetctl doctor`. Reads only: nothing is
// created, claimed or published.
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/cli/pool.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"

namespace rdmanet::cni::cli {

struct SliceLine {
    std::string slice;  // "10.70.0.0/25"
    std::string node;   // its holder: the NodeSlicePool's when read, else this node's held file
    // held: this node holds it; revoked: this node claimed it, but the NodeSlicePool no longer gives
    // it to this node; other: another node's; free: listed with no node (whereabouts' form).
    std::string state;
    bool revoked_locally = false;             // the held file records the revocation (the node stopped allocating)
    std::string ippool;                       // the slice IPPool's name ("" for a free slice)
    std::optional<std::uint64_t> used;        // entries of the slice IPPool (nullopt: not read)
    std::string usable;                       // addresses of the slice but its first and last (decimal)
    std::string free;                         // usable - used (decimal), "" when used is not known
    std::optional<std::uint64_t> local_used;  // this node's local store (nullopt: not this node's)
    std::uint64_t pending = 0;                // backlog changes of this slice's IPPool
};

struct SlicePoolReport {
    std::string name;  // the NodeSlicePool
    std::string node;  // this node's name in it ("" when this node holds nothing of it)
    std::string range;
    std::string slice_size;
    std::vector<SliceLine> slices;  // sorted by address
    std::string api_error;          // why the NodeSlicePool could not be read ("" = read, or not asked)
};

struct BacklogReport {
    std::string dir;
    std::uint64_t changes = 0;                       // unpublished changes
    std::optional<std::chrono::seconds> oldest_age;  // of the oldest change (from its marker's name)
    std::string error;                               // an unreadable marker
};

struct SlicesReport {
    std::string slices_dir;
    bool api_read = false;               // the NodeSlicePools were asked for
    std::string api_error;               // listing the NodeSlicePools failed
    std::string local_error;             // the local store or a held file could not be read (e.g. a read-only mount)
    std::vector<SlicePoolReport> pools;  // sorted by name
    BacklogReport backlog;
};

// `slices_dir` is <data_dir>/kubernetes/slices. With `api`, every NodeSlicePool of its namespace
// and the IPPools of their slices are read within `budget`; without, only this node's own files.
SlicesReport slices_report(const std::string& slices_dir, const std::optional<ipam::kube::KubeConfig>& api,
                           std::chrono::milliseconds budget, std::chrono::system_clock::time_point now);

nlohmann::json slices_report_json(const SlicesReport& report);
void print_slices_report(const SlicesReport& report, std::ostream& out);

// `pool slices`: slices_report of options.data_dir, from the API too with --kubeconfig/--in-cluster.
int pool_slices(const PoolOptions& options, std::ostream& out, std::ostream& err);

}  // namespace rdmanet::cni::cli
