#pragma once
// DRANET's profile provider: the three endpoints over rdmanet's IPAM, the policyRouting planner
// and the provider's claim records. The transport (cni/node/unix_http_server.hpp) is separate:
// handle() takes a parsed request and never throws.
//
// Ownership: a device of a claim is the IPAM attachment (container id = claim UID, interface =
// device name) with the podref "dranet:<claim UID>" and the recorded network "dranet:<profile>":
//   - a repeat GetProfileConfig finds the same attachment and gets the same addresses;
//   - rdmanet's pod reconciler skips podrefs without a '/' (no pod identity to look up);
//   - a container runtime's CNI GC is scoped to its network's name, which never contains ':'.
#include <functional>
#include <string>
#include <vector>

#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/node/dranet/claim_records.hpp"
#include "rdmanet/cni/node/dranet/dranet_version.hpp"
#include "rdmanet/cni/node/dranet/wire.hpp"
#include "rdmanet/cni/node/unix_http_server.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"

namespace rdmanet::cni::node::dranet {

struct ProviderOptions {
    std::string profiles_dir;
    std::string state_dir;
    std::string node_name;
    // The Kubernetes access of profiles whose ipam section names no kubeconfig (the datastore
    // "kubernetes", node slices, nv-ipam pools); a profile's own kubernetes.kubeconfig wins.
    // Empty: such a profile is refused (400) as rdmanet-ipam refuses it.
    std::function<ipam::kube::KubeConfig()> default_kube;
    // The DRANET release that asks (--dranet-version): the answer holds only what it applies.
    DranetVersion dranet = kDefaultDranetVersion;
};

// The IPAM identity of a claim's device (see above).
std::string claim_podref(const std::string& claim_uid);
std::string claim_network(const std::string& profile);

// The start's survey of DIR: one line per profile that keeps claims where whereabouts'
// ip-reconciler would release them (whereabouts_hazard), or that does not parse. Those
// profiles' GetProfileConfig requests are refused (400) until they are fixed.
std::vector<std::string> survey_profiles(const std::string& profiles_dir, const NodePolicy& policy,
                                         const std::string& node_name);

class ProfileProvider {
public:
    ProfileProvider(ProviderOptions options, NodePolicy policy);

    // Routes: GET /health, POST /GetProfileConfig, POST /ReleaseProfileConfig.
    HttpResponse handle(const HttpRequest& request);

    // Throw ProviderError with the status to answer.
    NetworkConfigAnswer get_profile_config(const ProfileRequest& request);
    void release_profile_config(const ProfileRequest& request);

    const ClaimRecords& records() const { return records_; }

private:
    ProviderOptions options_;
    NodePolicy policy_;
    ClaimRecords records_;
};

}  // namespace rdmanet::cni::node::dranet
