#pragma once
// The node's durable backlog of slice-IPPool changes not yet published to the API server.
//
// One file per change in <slices dir>/backlog/, written (and fsynced, with its directory) BEFORE
// the change is committed to the node's local store, removed once the API server has it. A
// process killed anywhere therefore leaves, for every committed change, a marker that the next CNI
// call or the node agent publishes; a marker whose change never reached the local store is found
// out when published (publication reads the local store: see slice_publisher.hpp) and dropped.
// File names sort in creation order (nanoseconds since the epoch, pid, per-process counter), so
// the backlog is published in the order the node made its changes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/core/store.hpp"

namespace rdmanet::ipam::kube {

struct SliceChange {
    enum class Op { add, remove };
    Op op = Op::add;
    std::string ns;  // the IPPool's namespace
    PoolKey pool;    // the slice IPPool (name() is its object name)
    std::string container_id;
    std::string ifname;
    std::string podref;                              // add: the owner's podref
    std::vector<std::pair<uint128, Owner>> entries;  // remove: the entries released

    friend bool operator==(const SliceChange&, const SliceChange&) = default;
};

// Pure: the marker's text and back. from_json throws IpamError(io_failure) when malformed.
nlohmann::json to_json(const SliceChange& change);
SliceChange slice_change_from_json(const nlohmann::json& j);

class SliceBacklog {
public:
    explicit SliceBacklog(std::string dir);  // <slices dir>/backlog, created on first write

    // Writes a marker durably; returns its file name.
    std::string add(const SliceChange& change);
    void remove(const std::string& marker);
    // The markers in creation order (name, change). An unreadable marker (a torn write cannot
    // happen - each is renamed into place - but a hand-edited one can) is reported as io_failure.
    std::vector<std::pair<std::string, SliceChange>> pending() const;
    bool empty() const;
    const std::string& dir() const { return dir_; }

private:
    std::string dir_;
};

}  // namespace rdmanet::ipam::kube
