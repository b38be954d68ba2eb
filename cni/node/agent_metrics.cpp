#include "rdmanet/cni/node/agent_metrics.hpp"

#include <filesystem>

#include "rdmanet/cni/node/dranet/claim_gc.hpp"
#include "rdmanet/cni/node/prometheus_text.hpp"
#include "rdmanet/ipam/core/range.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"

namespace rdmanet::cni::node {

std::vector<PoolUsage> local_pool_usage(const std::string& data_dir) {
    std::vector<PoolUsage> pools;
    std::error_code ec;
    if (data_dir.empty() ||
        !std::filesystem::exists(std::filesystem::path(data_dir) / ipam::SqliteStore::kFileName, ec))
        return pools;
    ipam::SqliteStore store(data_dir);
    for (const auto& key : store.pools()) {
        const auto dump = store.dump(key);
        const auto usable = ipam::usable_offsets(key.range);
        PoolUsage p;
        p.network = key.network_name;
        p.range = key.range.str();
        p.size = static_cast<double>(usable.hi - usable.lo + 1);
        p.used = static_cast<double>(dump.allocations.size());
        pools.push_back(std::move(p));
    }
    return pools;
}

std::map<std::string, std::size_t> live_attachments_by_mode(const StateStore& store) {
    std::map<std::string, std::size_t> by_mode;
    for (const auto& state : store.list_all()) {
        const auto status = sandbox_status(state);
        if (status == SandboxStatus::alive || status == SandboxStatus::unknown) ++by_mode[state.mode];
    }
    return by_mode;
}

void AgentMetrics::record_pass(const RepairReport& report, double unix_seconds) {
    ++passes_;
    last_pass_ = unix_seconds;
    for (const auto& item : report.repaired) ++repairs_[{item.mode, item.reason}];
    for (const auto& item : report.failed) ++repair_failures_[item.mode];
    for (const auto& item : report.not_repairable) ++repair_failures_[item.mode];
    attachments_.clear();
    for (const auto& [mode, n] : report.alive_by_mode) attachments_[mode] = n;
}

void AgentMetrics::record_slice_publish(int published, int remaining, std::size_t conflicts) {
    slice_published_ += static_cast<std::uint64_t>(published);
    slice_conflicts_ += conflicts;
    slice_pending_ = static_cast<std::uint64_t>(remaining);
}

void AgentMetrics::record_deferred_releases(int finished, int remaining) {
    deferred_finished_ += static_cast<std::uint64_t>(finished);
    deferred_pending_ = static_cast<std::uint64_t>(remaining);
}

void AgentMetrics::record_kube_access(int refused, bool node_record) {
    access_refused_total_ += static_cast<std::uint64_t>(refused);
    access_denied_ = refused > 0 || node_record;
}

void AgentMetrics::record_claim_gc(const node::dranet::ClaimGcReport& report) {
    claims_held_ = report.held;
    if (!report.ran) return;  // no claim recorded: nothing asked, nothing to count
    ++claim_gc_rounds_;
    claims_released_ += report.released.size();
    claim_release_failures_ += report.failures.size();
    if (report.skipped != node::dranet::GcSkip::none) ++claim_gc_skipped_[node::dranet::to_string(report.skipped)];
}

void AgentMetrics::record_calls(const std::vector<CallRecord>& records) {
    for (const auto& r : records) calls_.add(r);
}

std::string AgentMetrics::render(const std::vector<PoolUsage>& pools) const {
    PrometheusText t;
    const auto pool_labels = [](const PoolUsage& p) {
        Labels l{{"network", p.network}, {"range", p.range}};
        if (!p.slice.empty()) l.emplace_back("slice", p.slice);
        return l;
    };
    t.family("rdmanet_pool_size", "gauge", "Addresses the pool's range can hand out (before exclusions).");
    for (const auto& p : pools) t.sample("rdmanet_pool_size", pool_labels(p), p.size);
    t.family("rdmanet_pool_used", "gauge", "Addresses allocated in the pool.");
    for (const auto& p : pools) t.sample("rdmanet_pool_used", pool_labels(p), p.used);
    t.family("rdmanet_pool_free", "gauge", "Addresses still free in the pool (size - used).");
    for (const auto& p : pools) t.sample("rdmanet_pool_free", pool_labels(p), p.size - p.used);

    t.family("rdmanet_attachments", "gauge", "Attachments on this node whose pod sandbox is alive, per mode.");
    for (const auto& [mode, n] : attachments_)
        t.sample("rdmanet_attachments", {{"mode", mode}}, static_cast<double>(n));

    t.family("rdmanet_agent_repairs_total", "counter",
             "Attachments undone by the agent, by mode and reason (netns_gone, netns_replaced, pod_gone).");
    for (const auto& [key, n] : repairs_)
        t.sample("rdmanet_agent_repairs_total", {{"mode", key.first}, {"reason", key.second}}, static_cast<double>(n));
    t.family("rdmanet_agent_repair_failures_total", "counter",
             "Repairs that left something behind (retried next pass).");
    for (const auto& [mode, n] : repair_failures_)
        t.sample("rdmanet_agent_repair_failures_total", {{"mode", mode}}, static_cast<double>(n));
    t.family("rdmanet_agent_passes_total", "counter", "Repair passes run by the agent.");
    t.sample("rdmanet_agent_passes_total", {}, static_cast<double>(passes_));
    t.family("rdmanet_agent_last_pass_timestamp_seconds", "gauge", "Unix time of the agent's last repair pass.");
    t.sample("rdmanet_agent_last_pass_timestamp_seconds", {}, last_pass_);

    t.family("rdmanet_slice_changes_published_total", "counter",
             "Node-slice allocation changes the agent published to the slice IPPools.");
    t.sample("rdmanet_slice_changes_published_total", {}, static_cast<double>(slice_published_));
    t.family("rdmanet_slice_change_conflicts_total", "counter",
             "Node-slice changes not published because another writer's entry holds the address.");
    t.sample("rdmanet_slice_change_conflicts_total", {}, static_cast<double>(slice_conflicts_));
    t.family("rdmanet_slice_backlog_changes", "gauge",
             "Node-slice changes still waiting for the API server after the agent's last pass.");
    t.sample("rdmanet_slice_backlog_changes", {}, static_cast<double>(slice_pending_));
    t.family("rdmanet_ipam_deferred_releases", "gauge",
             "Single-pool IPAM releases a DEL left to the agent (the API server did not take them) still "
             "waiting after the agent's last pass.");
    t.sample("rdmanet_ipam_deferred_releases", {}, static_cast<double>(deferred_pending_));
    t.family("rdmanet_ipam_deferred_releases_finished_total", "counter",
             "Single-pool IPAM releases deferred by DEL that the agent finished.");
    t.sample("rdmanet_ipam_deferred_releases_finished_total", {}, static_cast<double>(deferred_finished_));
    t.family("rdmanet_kube_access_denied", "gauge",
             "1 while the Kubernetes API server refuses this node's credentials or permissions (401/403) in "
             "the agent's last pass or the node's last node-slice CNI call: fix the kubeconfig or the RBAC.");
    t.sample("rdmanet_kube_access_denied", {}, access_denied_ ? 1.0 : 0.0);
    t.family("rdmanet_kube_access_denied_total", "counter",
             "API requests of the agent the Kubernetes API server refused with 401 or 403.");
    t.sample("rdmanet_kube_access_denied_total", {}, static_cast<double>(access_refused_total_));

    t.family("rdmanet_dranet_claims_held", "gauge",
             "ResourceClaims the DRANET provider holds addresses for on this node, after the agent's last claim GC.");
    t.sample("rdmanet_dranet_claims_held", {}, static_cast<double>(claims_held_));
    t.family("rdmanet_dranet_claims_released_total", "counter",
             "Claim devices the agent's claim GC released through the DRANET provider (their ResourceClaim was gone).");
    t.sample("rdmanet_dranet_claims_released_total", {}, static_cast<double>(claims_released_));
    t.family("rdmanet_dranet_claim_release_failures_total", "counter",
             "Releases of the claim GC the DRANET provider answered with an error (retried next pass).");
    t.sample("rdmanet_dranet_claim_release_failures_total", {}, static_cast<double>(claim_release_failures_));
    t.family("rdmanet_dranet_claim_gc_rounds_total", "counter",
             "Claim GC rounds of the agent that found the DRANET provider's claim records.");
    t.sample("rdmanet_dranet_claim_gc_rounds_total", {}, static_cast<double>(claim_gc_rounds_));
    t.family("rdmanet_dranet_claim_gc_skipped_total", "counter",
             "Claim GC rounds that released nothing or stopped early, by reason: discovery (resource.k8s.io not "
             "served or not discoverable), list (the ResourceClaim list failed), credentials (401/403), provider "
             "(the provider did not answer).");
    for (const char* reason : {"discovery", "list", "credentials", "provider"}) {
        const auto it = claim_gc_skipped_.find(reason);
        t.sample("rdmanet_dranet_claim_gc_skipped_total", {{"reason", reason}},
                 static_cast<double>(it == claim_gc_skipped_.end() ? 0 : it->second));
    }

    t.family("rdmanet_plugin_calls_total", "counter", "CNI calls of the plugin by verb and result code (0 = success).");
    for (const auto& [key, n] : calls_.calls())
        t.sample("rdmanet_plugin_calls_total", {{"verb", key.first}, {"code", std::to_string(key.second)}},
                 static_cast<double>(n));
    t.family("rdmanet_plugin_duration_seconds", "histogram", "Duration of the plugin's CNI calls by verb.");
    for (const auto& [verb, h] : calls_.durations()) {
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i < CallStats::kBuckets.size(); ++i) {
            cumulative += h.buckets[i];
            t.sample("rdmanet_plugin_duration_seconds_bucket",
                     {{"verb", verb}, {"le", format_sample_value(CallStats::kBuckets[i])}},
                     static_cast<double>(cumulative));
        }
        t.sample("rdmanet_plugin_duration_seconds_bucket", {{"verb", verb}, {"le", "+Inf"}},
                 static_cast<double>(h.count));
        t.sample("rdmanet_plugin_duration_seconds_sum", {{"verb", verb}}, h.sum_seconds);
        t.sample("rdmanet_plugin_duration_seconds_count", {{"verb", verb}}, static_cast<double>(h.count));
    }
    return t.str();
}

}  // namespace rdmanet::cni::node
