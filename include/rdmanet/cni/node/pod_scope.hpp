#pragma once
// The node agent's view of the Kubernetes API: the pods of its own node only, in one
// field-selected list (spec.nodeName=NODE), so the agent's requests per pass do not grow with
// the pods of other nodes. An attachment whose pod (K8S_POD_NAMESPACE/K8S_POD_NAME from its
// CNI_ARGS) is no longer listed, or is listed with another K8S_POD_UID, for a grace period is
// undone like a missed DEL, even while its sandbox lingers.
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/plugin/plugin.hpp"
#include "rdmanet/cni/node/repair.hpp"
#include "rdmanet/ipam/kube/api.hpp"

namespace rdmanet::cni::node {

// "namespace/name" -> metadata.uid
using NodePods = std::map<std::string, std::string>;

// Pure: the pods of a PodList body. Throws std::runtime_error when it is not a PodList.
NodePods parse_pod_list(const std::string& body);
// GET /api/v1/pods?fieldSelector=spec.nodeName%3DNODE. Throws IpamError on API failure, and
// std::invalid_argument for a node name that is not a DNS subdomain.
NodePods list_node_pods(ipam::kube::KubeApi& api, const std::string& node);

enum class PodPresence { present, missing, replaced, unknown };
// Pure: unknown when the attachment's CNI_ARGS name no pod.
PodPresence pod_presence(const AttachmentState& state, const NodePods& pods);

// Remembers since when each attachment's pod has been missing; a pod that reappears is forgotten.
class GonePodTracker {
public:
    // The attachments whose sandbox is still alive and whose pod has been missing or replaced for
    // at least `grace` as of `now`.
    std::vector<AttachmentState> update(const StateStore& store, const NodePods& pods,
                                        std::chrono::steady_clock::time_point now, std::chrono::seconds grace);

private:
    std::map<std::string, std::chrono::steady_clock::time_point> first_missing_;
};

// Undoes each attachment by DEL inside its recorded namespace (repair_attachment).
RepairReport repair_attachments_of_gone_pods(const std::vector<AttachmentState>& states, const NodePolicy& policy,
                                             const KernelServices& services);

}  // namespace rdmanet::cni::node
