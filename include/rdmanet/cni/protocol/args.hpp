#pragma once
// CNI_ARGS, parsed leniently (Multus sends duplicates, IgnoreUnknown, empty segments).
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rdmanet::cni {

struct CniArgs {
    // First non-empty value per key wins; keys are case-sensitive as in Go's LoadArgs.
    std::map<std::string, std::string, std::less<>> values;

    std::optional<std::string> get(std::string_view key) const;
    std::string pod_namespace() const;        // K8S_POD_NAMESPACE or ""
    std::string pod_name() const;             // K8S_POD_NAME or ""
    std::string pod_uid() const;              // K8S_POD_UID or ""
    std::string infra_container_id() const;   // K8S_POD_INFRA_CONTAINER_ID or ""
    std::optional<std::string> mac() const;   // MAC
    std::vector<std::string> ips() const;     // IP, comma list, CIDR optional
    std::optional<std::string> guid() const;  // GUID (InfiniBand)
};

// Splits on ';', each segment at the first '='; skips empty segments and segments without '='.
CniArgs parse_cni_args(std::string_view raw);

}  // namespace rdmanet::cni
