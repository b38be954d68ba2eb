#pragma once
// The node policy and attachment-state store that in-process tests hand to a mode's add/del:
// the test process's policy (RDMANET_POLICY_FILE, else the built-in defaults), as the plugin
// would load it for this call.
#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/protocol/env.hpp"

namespace rdmanet::test {

struct ModeContext {
    ModeContext() = default;
    ModeContext(const ModeContext&) = delete;
    ModeContext& operator=(const ModeContext&) = delete;

    cni::NodePolicy policy = cni::load_node_policy(cni::process_env_lookup(), cni::mode_names());
    cni::StateStore states{policy};
};

}  // namespace rdmanet::test
