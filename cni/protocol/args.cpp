#include "rdmanet/cni/protocol/args.hpp"

#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

CniArgs parse_cni_args(std::string_view raw) {
    // Go's LoadArgs fails on unknown keys and malformed pairs; Multus sends duplicates and an
    // IgnoreUnknown in varying order (multus #1446), so nothing here is ever an error.
    CniArgs args;
    while (!raw.empty()) {
        auto semicolon = raw.find(';');
        std::string_view segment = raw.substr(0, semicolon);
        raw = semicolon == std::string_view::npos ? std::string_view{} : raw.substr(semicolon + 1);

        auto equals = segment.find('=');
        if (segment.empty() || equals == std::string_view::npos || equals == 0) continue;
        std::string_view key = segment.substr(0, equals);
        std::string_view value = segment.substr(equals + 1);        // may itself contain '='
        if (value.empty()) continue;                                // an empty value never shadows a later real one
        args.values.emplace(std::string(key), std::string(value));  // first one wins
    }
    return args;
}

std::optional<std::string> CniArgs::get(std::string_view key) const {
    auto it = values.find(key);
    if (it == values.end()) return std::nullopt;
    return it->second;
}

std::string CniArgs::pod_namespace() const { return get("K8S_POD_NAMESPACE").value_or(""); }
std::string CniArgs::pod_name() const { return get("K8S_POD_NAME").value_or(""); }
std::string CniArgs::pod_uid() const { return get("K8S_POD_UID").value_or(""); }
std::string CniArgs::infra_container_id() const { return get("K8S_POD_INFRA_CONTAINER_ID").value_or(""); }
std::optional<std::string> CniArgs::mac() const { return get("MAC"); }
std::optional<std::string> CniArgs::guid() const { return get("GUID"); }

std::vector<std::string> CniArgs::ips() const {
    // Returned as written (trimmed); whoever uses them validates, CNI_ARGS parsing never fails.
    std::vector<std::string> ips;
    auto list = get("IP");
    if (!list) return ips;
    std::string_view rest = *list;
    while (!rest.empty()) {
        auto comma = rest.find(',');
        std::string_view item = text::trim(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        if (!item.empty()) ips.emplace_back(item);
    }
    return ips;
}

}  // namespace rdmanet::cni
