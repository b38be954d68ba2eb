#pragma once
// Where the Kubernetes API is and how to authenticate to it: a kubeconfig file (the subset kubectl
// and whereabouts' installer write) or the in-cluster service account. Parsing is pure; only
// load_* read files.
//
// Read from the current context's cluster and user:
//   cluster: server, certificate-authority, certificate-authority-data, insecure-skip-tls-verify
//   user:    token, tokenFile, client-certificate(-data), client-key(-data)
//   context: namespace (whereabouts' namespace for IPPools; "" -> kube-system)
// Relative file paths are relative to the kubeconfig's directory (kubectl's rule). Files named by
// the kubeconfig are read when it is loaded, so every failure names the file at load time.
// Not supported (an error naming the key, not a silent anonymous request): exec/auth-provider
// plugins, username/password.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rdmanet::ipam {
struct StoreConfig;  // rdmanet/ipam/core/config.hpp
}

namespace rdmanet::ipam::kube {

inline constexpr std::string_view kDefaultNamespace = "kube-system";
inline constexpr std::string_view kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct KubeConfig {
    std::string server;  // "https://10.0.0.1:6443", no trailing slash
    std::string namespace_ = std::string(kDefaultNamespace);
    std::string token;   // bearer token ("" = none); never logged
    std::string ca_pem;  // "" = the system trust store
    std::string client_cert_pem, client_key_pem;
    bool insecure_skip_tls_verify = false;
    std::string source;  // "kubeconfig /etc/cni/...", for messages
};

// Files referenced by a kubeconfig are read through this (tests substitute their own).
struct FileReader {
    virtual ~FileReader() = default;
    // Throws IpamError(invalid_config) naming `what` and the path when unreadable.
    virtual std::string read(const std::string& path, const std::string& what) const;
};

// Throws IpamError(invalid_config) naming the source and the key at fault.
KubeConfig parse_kubeconfig(std::string_view yaml_text, const std::string& source_path,
                            const FileReader& files = FileReader{});
// With `allowed_dirs` (the node policy's kubeconfigDirs) the kubeconfig and every file it names are
// read with read_confined below one of them: a file elsewhere, or reached through a symlink, is
// refused (IpamError 7 naming the key and the allowed place, `on_refusal` told first) before it is
// opened. Empty = no confinement (rdmanetctl's --kubeconfig, library callers).
KubeConfig load_kubeconfig(const std::string& path, const std::vector<std::string>& allowed_dirs = {},
                           const std::function<void(const std::string& message)>& on_refusal = {});

// The Kubernetes access of a store configuration: its kubeconfig (confined to its
// kubeconfig_dirs), else the caller's default_kube, else the error that the kubeconfig is required.
KubeConfig load_store_kubeconfig(const StoreConfig& store);

// The in-cluster service account: the API server at `service_host`:`service_port` (the pod's
// KUBERNETES_SERVICE_HOST/_PORT, which the caller reads: the library reads no environment) and
// the token, CA and namespace files under `dir`. nullopt when not running in a pod (no host or
// no token file).
std::optional<KubeConfig> in_cluster_config(const std::optional<std::string>& service_host,
                                            const std::optional<std::string>& service_port,
                                            const std::string& dir = std::string(kServiceAccountDir));

}  // namespace rdmanet::ipam::kube
