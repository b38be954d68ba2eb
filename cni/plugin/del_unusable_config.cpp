// DEL must never wedge a pod: a configuration that cannot be used (invalid, or refused by the node
// policy) fails every retry identically, so failing it is only right when something is known to
// remain. The attachment state is what we know.
#include <spdlog/spdlog.h>

#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/policy/checks.hpp"
#include "rdmanet/cni/protocol/result.hpp"
#include "rdmanet/cni/plugin/teardown.hpp"

namespace rdmanet::cni {

bool is_config_error(const Error& e) {
    return e.code() == static_cast<int>(ErrorCode::decode_failure) ||
           e.code() == static_cast<int>(ErrorCode::invalid_config) ||
           e.code() == static_cast<int>(ErrorCode::unsupported_field) ||
           e.code() == static_cast<int>(ErrorCode::incompatible_version);
}

std::vector<AttachmentState> recorded_attachments(const StateStore& store, const std::string& network,
                                                  const std::string& container_id, const std::string& ifname) {
    std::vector<AttachmentState> found;
    for (auto& state : store.list_all())
        if (state.container_id == container_id && state.ifname == ifname &&
            (network.empty() || state.network == network))
            found.push_back(std::move(state));
    return found;
}

std::string describe_remains(const AttachmentState& state) {
    std::string text = "network " + state.network + " has a recorded " + state.mode + " attachment";
    if (!state.host_ifname.empty()) text += " of host device " + state.host_ifname;
    if (!state.pci_address.empty()) text += " (PCI " + state.pci_address + ")";
    if (!state.rdma_device.empty()) text += ", RDMA device " + state.rdma_device;
    std::string addresses;
    try {
        for (const auto& ip : result_from_json(state.result).ips)
            addresses += (addresses.empty() ? "" : ", ") + ip.address.str();
    } catch (const std::exception&) {
    }
    if (!addresses.empty()) text += ", addresses " + addresses;
    if (!state.netns.empty()) text += ", in " + state.netns;
    return text;
}

void del_with_unusable_config(const Environment& env, const std::string& network, const Error& why,
                              const NodePolicy& policy) {
    const auto recorded = recorded_attachments(StateStore(policy), network, env.container_id, env.ifname);
    if (recorded.empty()) {
        const std::string line = "DEL " + env.container_id + " " + env.ifname + " succeeded with an unusable config (" +
                                 why.msg() + "): nothing is recorded for this attachment, so nothing was set up";
        spdlog::warn("{}", line);
        audit_line(policy, line);
        return;
    }
    std::string remains;
    for (const auto& state : recorded) remains += (remains.empty() ? "" : "; ") + describe_remains(state);
    throw Error(why.code(), why.msg() + "; DEL cannot undo what remains: " + remains,
                "fix the network configuration (or the node policy) and let the runtime retry DEL, or run "
                "`rdmanetctl reconcile --local` once the pod's network namespace is gone");
}

std::string network_name_of(const std::string& input) {
    try {
        const auto j = parse_json_bounded(input);
        if (j.is_object() && j.contains("name") && j["name"].is_string()) {
            const auto name = j["name"].get<std::string>();
            // Only a name that could key a state file (no '/' or ':'), else none.
            if (name.find_first_of("/:") == std::string::npos) return name;
        }
    } catch (const std::exception&) {
    }
    return {};
}

}  // namespace rdmanet::cni
