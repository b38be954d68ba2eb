#include "rdmanet/cni/node/pod_scope.hpp"

#include <stdexcept>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/protocol/args.hpp"
#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/cni/state/sandbox.hpp"
#include "rdmanet/base/json_fields.hpp"

namespace rdmanet::cni::node {

namespace {

bool is_dns_subdomain(const std::string& name) {
    if (name.empty() || name.size() > 253) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
    return true;
}

std::string key_of(const AttachmentState& s) { return s.network + ":" + s.container_id + ":" + s.ifname; }

}  // namespace

NodePods parse_pod_list(const std::string& body) {
    const auto j = parse_json_bounded(body);
    if (!j.is_object() || !j.contains("items") || !j["items"].is_array())
        throw std::runtime_error("the pod list has no items");
    NodePods pods;
    const auto raise = [](std::string message, std::string) { throw std::runtime_error("the pod list: " + message); };
    for (std::size_t i = 0; i < j["items"].size(); ++i) {
        const auto& p = j["items"][i];
        if (!p.is_object() || !p.contains("metadata") || !p["metadata"].is_object()) continue;
        const base::JsonFields m(p["metadata"], "items[" + std::to_string(i) + "].metadata", raise);
        pods[m.string("namespace").value_or("") + "/" + m.string("name").value_or("")] = m.string("uid").value_or("");
    }
    return pods;
}

NodePods list_node_pods(ipam::kube::KubeApi& api, const std::string& node) {
    if (!is_dns_subdomain(node)) throw std::invalid_argument("node name \"" + node + "\" is not a DNS subdomain");
    const std::string path = "/api/v1/pods?fieldSelector=spec.nodeName%3D" + node;
    const auto r =
        api.call("GET", path, {}, "application/json", ipam::kube::RequestOptions{{}, false, ipam::kube::kMaxListBody});
    if (r.status != 200) api.fail("GET " + path, r);
    return parse_pod_list(r.body);
}

PodPresence pod_presence(const AttachmentState& state, const NodePods& pods) {
    const auto args = parse_cni_args(state.cni_args);
    if (args.pod_namespace().empty() || args.pod_name().empty()) return PodPresence::unknown;
    const auto it = pods.find(args.pod_namespace() + "/" + args.pod_name());
    if (it == pods.end()) return PodPresence::missing;
    if (!args.pod_uid().empty() && !it->second.empty() && args.pod_uid() != it->second) return PodPresence::replaced;
    return PodPresence::present;
}

std::vector<AttachmentState> GonePodTracker::update(const StateStore& store, const NodePods& pods,
                                                    std::chrono::steady_clock::time_point now,
                                                    std::chrono::seconds grace) {
    std::vector<AttachmentState> due;
    std::map<std::string, std::chrono::steady_clock::time_point> still_missing;
    for (auto& state : store.list_all()) {
        if (!state.complete || sandbox_status(state) != SandboxStatus::alive) continue;
        const auto presence = pod_presence(state, pods);
        if (presence != PodPresence::missing && presence != PodPresence::replaced) continue;
        const auto key = key_of(state);
        const auto it = first_missing_.find(key);
        const auto since = it == first_missing_.end() ? now : it->second;
        still_missing[key] = since;
        if (now - since >= grace) due.push_back(std::move(state));
    }
    first_missing_ = std::move(still_missing);
    return due;
}

RepairReport repair_attachments_of_gone_pods(const std::vector<AttachmentState>& states, const NodePolicy& policy,
                                             const KernelServices& services) {
    RepairReport report;
    for (const auto& state : states) {
        RepairItem item{state.network, state.container_id, state.ifname, state.mode, state.netns, "pod_gone", ""};
        try {
            repair_attachment(state, policy, services, /*in_recorded_netns=*/true);
            spdlog::info("repaired: {} {} {} ({}): its pod is gone from the API", state.network, state.container_id,
                         state.ifname, state.mode);
            report.repaired.push_back(std::move(item));
        } catch (const std::exception& e) {
            item.error = e.what();
            report.failed.push_back(std::move(item));
        }
    }
    return report;
}

}  // namespace rdmanet::cni::node
