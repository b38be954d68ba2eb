#pragma once
// rdmanetctl install: the node installer the DaemonSet runs (binaries, kubeconfig, node policy,
// the RDMA netns mode). Plain functions writing to `out`/`err` and returning the exit status; the
// CLI11 wiring is cni/cli/admin_cli.hpp. Every path they touch comes from the options, so tests
// run them against temporary trees.
#include <chrono>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace rdmanet::cni::cli {

// Where `rdmanetctl install` writes the IPAM kubeconfig, relative to the CNI config dir.
inline constexpr const char* kKubeconfigRelPath = "rdmanet.d/rdmanet.kubeconfig";

struct InstallOptions {
    std::string source_dir = "/opt/rdmanet/bin";  // binaries in the image
    std::vector<std::string> binaries = {"rdmanet", "rdmanet-ipam"};
    std::string cni_bin_dir = "/host/opt/cni/bin";
    std::string cni_conf_dir = "/host/etc/cni/net.d";
    bool skip_binaries = false;
    // Service account (token, ca.crt, namespace); empty = no kubeconfig written.
    std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
    std::string api_server;                      // "" = https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
    std::string ipam_namespace = "kube-system";  // IPPool namespace (whereabouts' default)
    std::string kubeconfig_rel = kKubeconfigRelPath;
    std::string rdma_netns_mode;  // "" = leave alone; "exclusive" | "shared": persist it
    std::string modprobe_dir = "/host/etc/modprobe.d";
    bool watch = false;  // loop: re-check binaries, rewrite kubeconfig on rotation
    std::chrono::seconds interval{60};
    // Test hook: how many rounds the watch loop runs (0 = forever) and how it waits between rounds
    // (true = stop now). Default: until SIGTERM/SIGINT (stop_signal.hpp), which ends the loop with 0.
    unsigned max_rounds = 0;
    std::function<bool(std::chrono::seconds)> wait;
    std::function<std::optional<std::string>(const char*)> getenv;  // default: the process environment
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
std::string make_kubeconfig(const std::string& server, const std::string& ca_pem, const std::string& token,
                            const std::string& ns);

InstallReport install_once(const InstallOptions& options, std::ostream& out);
int install(const InstallOptions& options, std::ostream& out, std::ostream& err);

}  // namespace rdmanet::cni::cli
