#pragma once
// One implementation of "undo an attachment", shared by the runtime's DEL and by the node agent
// that repairs attachments whose DEL never came.
#include <string>
#include <vector>

#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/plugin/plugin.hpp"

namespace rdmanet::cni {

// DEL: releases the addresses, takes the interface out of the pod (or recovers it from the host
// when the kernel returned it), restores what ADD changed and removes the attachment state. Every
// step runs even when one fails; failures are reported together as code 11 and the state is
// kept, so a retry knows what to undo. An empty env.netns means "the pod's namespace is gone":
// nothing is done inside any namespace.
void del_attachment(const NetConf& conf, const Environment& env, const NodePolicy& policy,
                    const KernelServices& services);

// True for errors that say the configuration itself is unusable (undecodable, invalid, or
// refused by the node policy): repeating the same call can never succeed.
bool is_config_error(const Error& e);

// The attachment states recorded for (container id, ifname); in `network` only when not empty.
std::vector<AttachmentState> recorded_attachments(const StateStore& store, const std::string& network,
                                                  const std::string& container_id, const std::string& ifname);

// One line naming what an attachment state says remains to be undone (mode, network, devices,
// addresses), for error messages.
std::string describe_remains(const AttachmentState& state);

// DEL with a configuration that cannot be used (`why`): with nothing recorded for the attachment,
// nothing was ever set up under it, so the DEL succeeds (logged and audited) instead of failing
// for ever and wedging the pod in Terminating. With a recorded attachment, throws `why`'s code
// with a message naming what remains and how to get it undone.
void del_with_unusable_config(const Environment& env, const std::string& network, const Error& why,
                              const NodePolicy& policy);

// The "name" of a network configuration that may not parse as one ("" when there is none).
std::string network_name_of(const std::string& input);

}  // namespace rdmanet::cni
