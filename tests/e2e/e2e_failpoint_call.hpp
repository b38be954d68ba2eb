#pragma once
// What the failpoint walk (a kill at each step) and the error walk (an error at each step) share:
// one plugin call with a failpoint armed, and which steps belong to the Kubernetes datastore.
// Failpoint builds only (-DRDMANET_FAILPOINTS=ON).
#include <map>
#include <string>
#include <string_view>

#include "e2e/e2e_helpers.hpp"

namespace rdmanet::test::e2e {

// The plugin binary under test and what it needs in its environment beyond the workspace's.
struct PluginUnderTest {
    std::string path = rdmanet_path();
    std::map<std::string, std::string> env;
};

// What the plugin does when it reaches the armed step: SIGKILL itself (a crash), or throw the
// step's error (RDMANET_FAILPOINT_ACTION=error: a failure the code must handle and unwind).
enum class FailpointAction { kill, error };

// One CNI call as net1 of `pod`, with `failpoint` armed (none when empty).
inline CniOutcome call_with_failpoint(const Workspace& ws, const std::string& command, const ScopedNetns& pod,
                                      const std::string& id, const json& conf, const std::string& failpoint,
                                      FailpointAction action, const PluginUnderTest& plugin = {}) {
    PluginRequest req;
    req.command = command;
    req.container_id = id;
    req.netns = pod.path();
    req.ifname = "net1";
    req.args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=walk;K8S_POD_NAME=" + id;
    req.path = default_cni_path();
    req.stdin_data = conf.dump();
    auto env = ws.env();
    env.insert(plugin.env.begin(), plugin.env.end());
    if (!failpoint.empty()) {
        env["RDMANET_FAILPOINT"] = failpoint;
        if (action == FailpointAction::error) env["RDMANET_FAILPOINT_ACTION"] = "error";
    }
    return invoke_plugin(plugin.path, req, env);
}

// The Kubernetes store's steps with one IPPool per range (pool entry and reservation written in
// two requests): node-slice mode passes neither.
inline bool single_object_step(std::string_view step) {
    return step == "add_after_pool_write" || step == "del_after_reservation_drop";
}

// The Kubernetes store's steps in node-slice mode (node_slice_size): slice claimed, allocation
// committed locally, published.
inline bool slice_step(std::string_view step) {
    return step == "add_after_slice_claim" || step == "add_after_slice_commit" || step == "add_after_slice_publish";
}

// The Kubernetes store's own steps: a walk on the local store passes none of them.
inline bool kube_store_step(std::string_view step) { return single_object_step(step) || slice_step(step); }

}  // namespace rdmanet::test::e2e
