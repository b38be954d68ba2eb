#pragma once
// rdmanetctl's cluster-admin commands: render (network spec -> NetworkAttachmentDefinition),
// install (node installer run by the DaemonSet) and doctor (node checks). Like ctl.hpp, these are
// plain functions writing to `out`/`err` and returning the exit status; the CLI11 wiring lives in
// cni/main/rdmanetctl.cpp. Every path they touch comes from the options, so tests run them
// against temporary trees.
#include <chrono>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"

namespace rdmanet::netns {
class VfControl;
}

namespace rdmanet::cni::ctl {

// ---- render ---------------------------------------------------------------------------------

// The project's own network kind (input of `rdmanetctl render` only; no controller applies it).
inline constexpr const char* kNetworkApiVersion = "rdmanet.dev/v1alpha1";
inline constexpr const char* kNetworkKind = "RdmaNetwork";
inline constexpr const char* kResourceNameAnnotation = "k8s.v1.cni.cncf.io/resourceName";
// Where `rdmanetctl install` writes the IPAM kubeconfig, relative to the CNI config dir.
inline constexpr const char* kKubeconfigRelPath = "rdmanet.d/rdmanet.kubeconfig";
inline constexpr const char* kDefaultKubeconfigPath = "/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig";

struct RenderOptions {
    // "" keeps the network's IPAM; "rdmanet" switches whereabouts (same keys) and nv-ipam (its
    // pools kept: rdmanet-ipam reads nv-ipam's IPPool/CIDRPool itself) to rdmanet-ipam.
    std::string ipam;
    // With ipam == "rdmanet": convert nv-ipam's IPPool into node slices (cni/ctl/nv_ipam.hpp)
    // instead of keeping the pool.
    bool nv_ipam_to_slices = false;
    // With ipam == "rdmanet" and datastore kubernetes: the kubeconfig the IPAM uses.
    std::string ipam_kubeconfig = kDefaultKubeconfigPath;
    // cniVersion written for the operator kinds (theirs render 0.3.1; rdmanet prefers 1.0.0).
    std::string cni_version = "1.0.0";
    std::string output = "yaml";   // yaml | json
    bool validate = true;          // run the plugin's parser on the result (tests turn it off)
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

// ---- install --------------------------------------------------------------------------------

struct InstallOptions {
    std::string source_dir = "/opt/rdmanet/bin";       // binaries in the image
    std::vector<std::string> binaries = {"rdmanet", "rdmanet-ipam"};
    std::string cni_bin_dir = "/host/opt/cni/bin";
    std::string cni_conf_dir = "/host/etc/cni/net.d";
    bool skip_binaries = false;
    // Service account (token, ca.crt, namespace); empty = no kubeconfig written.
    std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
    std::string api_server;            // "" = https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
    std::string ipam_namespace = "kube-system";   // IPPool namespace (whereabouts' default)
    std::string kubeconfig_rel = kKubeconfigRelPath;
    std::string rdma_netns_mode;       // "" = leave alone; "exclusive" | "shared": persist it
    std::string modprobe_dir = "/host/etc/modprobe.d";
    bool watch = false;                // loop: re-check binaries, rewrite kubeconfig on rotation
    std::chrono::seconds interval{60};
    // Test hook: how many rounds the watch loop runs (0 = forever) and how it waits between rounds
    // (true = stop now). Default: until SIGTERM/SIGINT (stop_signal.hpp), which ends the loop with 0.
    unsigned max_rounds = 0;
    std::function<bool(std::chrono::seconds)> wait;
    std::function<std::optional<std::string>(const char*)> getenv;   // default: the process environment
};

// What one install pass changed (for the log line and tests).
struct InstallReport {
    std::vector<std::string> binaries_replaced;
    bool kubeconfig_written = false;
    bool modprobe_written = false;
};

// Copies `source` to `target` the same way (mode 0755). Returns false when `target` already has
// the same bytes (nothing done).
bool install_binary_atomic(const std::string& source, const std::string& target);

// The kubeconfig the IPAM uses: server, CA (embedded), bearer token, context namespace.
std::string make_kubeconfig(const std::string& server, const std::string& ca_pem,
                            const std::string& token, const std::string& ns);

InstallReport install_once(const InstallOptions& options, std::ostream& out);
int install(const InstallOptions& options, std::ostream& out, std::ostream& err);

// ---- doctor ---------------------------------------------------------------------------------

struct DoctorOptions {
    std::string root = "/";                       // every path below is read under it
    std::string cni_bin_dir = "/opt/cni/bin";
    std::string cni_conf_dir = "/etc/cni/net.d";
    std::string kubeconfig;                       // "" = <cni_conf_dir>/rdmanet.d/rdmanet.kubeconfig
    std::string ipam_data_dir = std::string(ipam::kDefaultDataDir);   // node slices: <it>/kubernetes/slices
    std::map<std::string, unsigned> expect_vfs;   // PF netdev -> VFs the node should have
    std::string expect_netns_mode;                // "" | exclusive | shared
    bool check_api = false;                       // reach the API server with the kubeconfig
    std::chrono::milliseconds api_timeout{3000};
    bool json = false;
    // Test hook for check_api: returns "" when reachable, else the problem.
    std::function<std::string(const ipam::kube::KubeConfig& kubeconfig, std::chrono::milliseconds)> probe_api;
    // Where each configured VF's PF-side settings are read (one "sriov.vf" finding per VF).
    // nullptr: the kernel's rtnetlink when root is "/", none under another root (a sysfs copy
    // names PFs this kernel does not have).
    netns::VfControl* vf_control = nullptr;
};

enum class Status { ok, warn, fail };

struct Finding {
    std::string check;     // rdma.ports, rdma.netns, sriov.vfs, cni.binary, cni.config, ipam.kubeconfig,
                           // ipam.slices, ipam.slices.backlog, runtime.memlock
    Status status;
    std::string subject;   // what it is about ("mlx5_0 port 1", "/etc/containerd/config.toml")
    std::string message;   // what was found and, when not ok, what to do
};

std::vector<Finding> doctor_checks(const DoctorOptions& options);
// GET the IPPool list of the kubeconfig's namespace (limit 1) with its credentials: proves the
// server is reachable, the CA matches, the token is accepted and RBAC allows it. "" = fine.
std::string probe_api_server(const ipam::kube::KubeConfig& kubeconfig, std::chrono::milliseconds timeout);
nlohmann::json findings_json(const std::vector<Finding>& findings);
int doctor(const DoctorOptions& options, std::ostream& out, std::ostream& err);

}  // namespace rdmanet::cni::ctl
