#pragma once
// rdmanetctl render: other projects' network objects (network-operator's kinds, nv-ipam pools) and
// the project's own RdmaNetwork in, NetworkAttachmentDefinitions out, validated by the plugin's own
// parser; and the YAML reading and writing it needs. Plain functions; `render` writes to
// `out`/`err` and returns the exit status (CLI11 wiring: cni/cli/admin_cli.hpp).
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmanet::cni::translate {

// The project's own network kind (input of `rdmanetctl render` only; no controller applies it).
inline constexpr const char* kNetworkApiVersion = "rdmanet.dev/v1alpha1";
inline constexpr const char* kNetworkKind = "RdmaNetwork";
inline constexpr const char* kResourceNameAnnotation = "k8s.v1.cni.cncf.io/resourceName";
// The IPAM kubeconfig `rdmanetctl install` writes (kKubeconfigRelPath under /etc/cni/net.d).
inline constexpr const char* kDefaultKubeconfigPath = "/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig";

struct RenderOptions {
    // "" keeps the network's IPAM; "rdmanet" switches whereabouts (same keys) and nv-ipam (its
    // pools kept: rdmanet-ipam reads nv-ipam's IPPool/CIDRPool itself) to rdmanet-ipam.
    std::string ipam;
    // With ipam == "rdmanet": convert nv-ipam's IPPool into node slices (cni/translate/nv_ipam.hpp)
    // instead of keeping the pool.
    bool nv_ipam_to_slices = false;
    // With ipam == "rdmanet" and datastore kubernetes: the kubeconfig the IPAM uses.
    std::string ipam_kubeconfig = kDefaultKubeconfigPath;
    // cniVersion written for the operator kinds (theirs render 0.3.1; rdmanet prefers 1.0.0).
    std::string cni_version = "1.0.0";
    std::string output = "yaml";  // yaml | json
    bool validate = true;         // run the plugin's parser on the result (tests turn it off)
    // nv-ipam IPPools (nv-ipam.nvidia.com/v1alpha1) by name, for converting nv-ipam networks;
    // render_documents fills it from the input's IPPool documents.
    std::map<std::string, nlohmann::json> nv_ipam_pools;
};

// One network spec (a parsed YAML/JSON document as JSON) -> NAD object. Throws std::runtime_error
// (message says what to fix; for an invalid config it is the plugin's own message) on a bad spec.
nlohmann::json render_network(const nlohmann::json& spec, const RenderOptions& options);

// Every document of a YAML (or JSON) text -> list of NADs.
std::vector<nlohmann::json> render_documents(const std::string& text, const RenderOptions& options);

// Validates a CNI config (single plugin or conflist) as the plugin would see it from Multus:
// every plugin of type rdmanet through parse_net_conf(ADD), with `device_id` (when non-empty)
// injected as Multus does for a resourceName; rdmanet-ipam sections through the IPAM parser.
// Throws std::runtime_error with the plugin's message.
void validate_cni_config(const nlohmann::json& config, const std::string& device_id);

// YAML text (one document) -> JSON, scalars typed as YAML 1.2 core schema does it for plain
// scalars (bool, int, float, null); quoted scalars stay strings. Throws std::runtime_error.
// Every document; bounded in depth and expanded size, and safe from yaml-cpp 0.7's LoadAll loop.
nlohmann::json yaml_to_json(const std::string& text);
std::vector<nlohmann::json> yaml_documents_to_json(const std::string& text);
// How a plain (unquoted) scalar reads back: the writer quotes strings that would not round-trip.
nlohmann::json yaml_plain_scalar(const std::string& text);
// A NAD as YAML (spec.config as a literal block).
std::string nad_yaml(const nlohmann::json& nad);

// `render -f FILE` ("-" = stdin).
int render(const std::string& file, const RenderOptions& options, std::ostream& out, std::ostream& err);

}  // namespace rdmanet::cni::translate
