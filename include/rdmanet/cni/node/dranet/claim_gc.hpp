#pragma once
// The node agent's claim GC for the DRANET profile provider. DRANET calls ReleaseProfileConfig once
// and never retries it, so a release that failed (the provider restarting, the datastore away)
// would hold the claim's addresses forever. Each round the GC reads the provider's claim records
// (claims.json), lists the cluster's ResourceClaims (resource.k8s.io, the version the API server
// serves, found by discovery) and, for every recorded claim UID that is not among them, posts
// ReleaseProfileConfig to the provider's socket exactly as DRANET would: the release has one
// implementation and claims.json one writer (the provider, which serialises them).
//
// Never releases without a complete, successful list: a failed discovery or list (network, 5xx,
// timeout, 401/403, a malformed or paginated answer) skips the round and releases nothing.
//
// Why a claim created moments ago is never released: the records are read *before* the list is
// requested. A record exists only after DRANET's GetProfileConfig, which the kubelet makes while
// preparing a claim it read from the API server, so every recorded claim existed before the list
// began; a list without a resourceVersion is a consistent read from etcd and holds every object
// created before it began that is not deleted. A claim recorded after the records were read is not
// looked at in this round. And a claim absent from the list is gone for good: the API server keeps
// a claim that is allocated or reserved for a pod (its delete-protection finalizer) until no pod
// uses it, and a deleted UID never comes back.
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/node/dranet/claim_records.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"

namespace rdmanet::cni::node::dranet {

inline constexpr const char* kDefaultProviderSocket = "/run/rdmanet/dranet.sock";

struct ClaimGcOptions {
    std::string state_dir;                             // the provider's --state-dir (claims.json)
    std::string socket_path;                           // the provider's --socket
    std::chrono::milliseconds api_budget{30000};       // discovery + list, retries included
    std::chrono::milliseconds release_timeout{30000};  // one ReleaseProfileConfig (the provider's IPAM DEL)
};

// Why a round released nothing: the group's discovery failed or the group is not served; the list
// failed; the API server refused the credentials or the permissions (401/403: permanent until an
// admin fixes them); the provider did not answer (or its records could not be read).
enum class GcSkip { none, discovery, list, credentials, provider };
const char* to_string(GcSkip reason);

struct ClaimGcReport {
    bool ran = false;  // the provider has records: the API was asked
    GcSkip skipped = GcSkip::none;
    std::string error;                  // why skipped, or the release failures' messages
    std::string version;                // resource.k8s.io version listed
    std::vector<ClaimKey> released;     // answered 200 by the provider
    std::vector<std::string> failures;  // releases answered with an error (retried next round)
    std::size_t held = 0;               // claim UIDs recorded after the round
};

// The version of resource.k8s.io to list from its APIGroup discovery document: v1, else v1beta2,
// else v1beta1, else the server's preferred one (metadata.uid is the same in every version).
// nullopt when the document names no version.
std::optional<std::string> choose_resource_version(const nlohmann::json& api_group);

// The metadata.uid of every claim of a ResourceClaimList. Throws std::runtime_error when the list
// is not one (no items array, an item without a uid) or is incomplete (metadata.continue set).
std::set<std::string> parse_claim_uids(std::string_view list_body);

// The recorded (claim, device) pairs whose claim is not in `live`.
std::vector<ClaimKey> claims_to_release(const std::map<ClaimKey, ClaimRecord>& recorded,
                                        const std::set<std::string>& live);

// One round (see above). Never throws for the API's or the provider's trouble: it is in the report.
ClaimGcReport collect_claims(const ipam::kube::KubeConfig& config, const ClaimGcOptions& options);

}  // namespace rdmanet::cni::node::dranet
