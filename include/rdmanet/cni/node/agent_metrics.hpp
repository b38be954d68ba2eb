#pragma once
// What the node agent serves on its metrics port: pool usage of the local IPAM store, live
// attachments per mode, the repairs it did, the node-slice changes it published, and the plugin's calls (call_metrics.hpp) as
// counters and latency histograms. Pure aggregation plus one renderer; the agent feeds it.
//
// Pool samples carry {network, range}; a node slice of a pool (when the IPAM hands out per-node
// slices) adds a "slice" label to the same families, so dashboards and alerts written against
// {network, range} keep working.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rdmanet/cni/plugin/call_metrics.hpp"
#include "rdmanet/cni/node/repair.hpp"

namespace rdmanet::cni::node::dranet {
struct ClaimGcReport;
}

namespace rdmanet::cni::node {

struct PoolUsage {
    std::string network;  // ipam.network_name ("" when unset)
    std::string range;    // the pool's CIDR
    std::string slice;    // "" = the whole range
    double size = 0;      // addresses the range can hand out at all (before exclusions)
    double used = 0;      // allocations
};

// The pools of the local IPAM store in `data_dir` (nothing when it holds no store: never created).
std::vector<PoolUsage> local_pool_usage(const std::string& data_dir);

// Attachments whose sandbox is alive, per mode (read from the attachment states now).
std::map<std::string, std::size_t> live_attachments_by_mode(const StateStore& store);

class AgentMetrics {
public:
    void record_pass(const RepairReport& report, double unix_seconds);
    void record_calls(const std::vector<CallRecord>& records);
    void set_attachments(std::map<std::string, std::size_t> by_mode) { attachments_ = std::move(by_mode); }
    // One publication of the node-slice backlog (the Kubernetes datastore's node slices).
    void record_slice_publish(int published, int remaining, std::size_t conflicts);
    // Single-pool releases DEL deferred (kube_store.hpp): finished this pass, still waiting.
    void record_deferred_releases(int finished, int remaining);
    // One pass's view of the node's Kubernetes credentials: `refused` API requests of the agent
    // answered 401/403 in it; `node_record`: the node's record says the last CNI call or agent
    // request with them was refused (access_denied_record.hpp).
    void record_kube_access(int refused, bool node_record);
    // One round of the DRANET claim GC (claim_gc.hpp); one that found no claim record only sets
    // the held gauge to 0 (the provider's last claim was released by DRANET itself).
    void record_claim_gc(const node::dranet::ClaimGcReport& report);
    // The whole exposition (Prometheus text format 0.0.4).
    std::string render(const std::vector<PoolUsage>& pools) const;

private:
    std::uint64_t passes_ = 0;
    double last_pass_ = 0;
    std::map<std::pair<std::string, std::string>, std::uint64_t> repairs_;  // (mode, reason)
    std::map<std::string, std::uint64_t> repair_failures_;                  // mode
    std::map<std::string, std::size_t> attachments_;                        // mode
    std::uint64_t slice_published_ = 0;
    std::uint64_t slice_conflicts_ = 0;
    std::uint64_t slice_pending_ = 0;
    std::uint64_t deferred_finished_ = 0;
    std::uint64_t deferred_pending_ = 0;
    std::uint64_t access_refused_total_ = 0;
    bool access_denied_ = false;
    std::uint64_t claim_gc_rounds_ = 0;
    std::uint64_t claims_released_ = 0;
    std::uint64_t claim_release_failures_ = 0;
    std::map<std::string, std::uint64_t> claim_gc_skipped_;  // reason
    std::size_t claims_held_ = 0;
    CallStats calls_;
};

}  // namespace rdmanet::cni::node
