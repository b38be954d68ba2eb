// rdmanetctl install: what the DaemonSet's installer does on each node.
//   - copies the plugin binaries into the host's CNI bin dir atomically: the kubelet/runtime may
//     exec the plugin at any moment, so it must see either the old file or the new one, never a
//     half-written one (temporary file in the same directory, fsync, rename, fsync the directory);
//   - writes the IPAM kubeconfig (service-account token + CA + API server, context namespace =
//     the IPPool namespace) under the CNI config dir, 0600, and rewrites it when the projected
//     token rotates (--watch);
//   - writes the node policy file with its defaults when the admin has none;
//   - optionally persists the RDMA netns mode for the next boot (modprobe.d), since switching at
//     runtime fails with EBUSY while any other network namespace exists.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/cli/install.hpp"
#include "rdmanet/cni/cli/rdma.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/base/atomic_file.hpp"
#include "rdmanet/cni/node/stop_signal.hpp"
#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/base/fd.hpp"
#include "rdmanet/ipam/kube/base64.hpp"

namespace rdmanet::cni::cli {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_whole_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string trim_newlines(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

// A value written into the kubeconfig as a YAML double-quoted scalar: refuse anything that would
// need escaping rather than escape it (tokens are JWTs, names are DNS labels, servers URLs).
std::string yaml_safe(const std::string& value, const std::string& what) {
    for (unsigned char c : value)
        if (c < 0x21 || c > 0x7e || c == '"' || c == '\\')
            throw std::runtime_error(what + " contains a character that is not printable ASCII");
    if (value.empty()) throw std::runtime_error(what + " is empty");
    return value;
}

std::string env_or_empty(const InstallOptions& options, const char* name) {
    return (options.getenv ? options.getenv : process_env_lookup())(name).value_or("");
}

std::string api_server(const InstallOptions& options) {
    if (!options.api_server.empty()) return options.api_server;
    const auto host = env_or_empty(options, "KUBERNETES_SERVICE_HOST");
    auto port = env_or_empty(options, "KUBERNETES_SERVICE_PORT");
    if (host.empty())
        throw std::runtime_error(
            "KUBERNETES_SERVICE_HOST is not set: run inside a pod or pass --api-server https://HOST:PORT");
    if (port.empty()) port = "443";
    const bool ipv6 = host.find(':') != std::string::npos;
    return "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
}

// Writes `content` only when the file does not already hold it; true when written.
bool write_if_changed(const std::string& path, const std::string& content, unsigned mode) {
    if (auto current = read_whole_file(path); current && *current == content) {
        // Same bytes; still tighten the mode if someone loosened it.
        ::chmod(path.c_str(), mode);
        return false;
    }
    base::write_file_atomically(path, content, mode);
    return true;
}

bool install_kubeconfig(const InstallOptions& options) {
    const fs::path sa(options.service_account_dir);
    auto token = read_whole_file((sa / "token").string());
    if (!token)
        throw std::runtime_error("cannot read the service account token " + (sa / "token").string() +
                                 ": run in a pod with a service account, or pass --service-account-dir DIR "
                                 "(or --service-account-dir \"\" to skip the kubeconfig)");
    auto ca = read_whole_file((sa / "ca.crt").string());
    if (!ca || ca->find("-----BEGIN CERTIFICATE-----") == std::string::npos)
        throw std::runtime_error("no PEM CA certificate at " + (sa / "ca.crt").string());
    const auto content = make_kubeconfig(api_server(options), *ca, trim_newlines(*token), options.ipam_namespace);
    const fs::path target = fs::path(options.cni_conf_dir) / options.kubeconfig_rel;
    fs::create_directories(target.parent_path());
    ::chmod(target.parent_path().c_str(), 0700);
    return write_if_changed(target.string(), content, 0600);
}

bool install_modprobe(const InstallOptions& options) {
    if (options.rdma_netns_mode.empty()) return false;
    if (options.rdma_netns_mode != "exclusive" && options.rdma_netns_mode != "shared")
        throw std::runtime_error("--rdma-netns-mode must be exclusive or shared");
    const std::string value = options.rdma_netns_mode == "exclusive" ? "0" : "1";
    const std::string content =
        "# Written by rdmanetctl install: RDMA network namespace mode at boot (0 = exclusive, 1 = shared).\n"
        "# The mode cannot change while RDMA devices are in use; this takes effect on the next boot\n"
        "# (or the next load of ib_core).\n"
        "options ib_core netns_mode=" +
        value + "\n";
    fs::create_directories(options.modprobe_dir);
    return write_if_changed((fs::path(options.modprobe_dir) / kModprobeConfName).string(), content, 0644);
}

// The node policy is the admin's: written with its defaults only when absent, never replaced.
// Returns the path written, "" when one was there.
std::string install_policy_if_absent(const InstallOptions& options) {
    const fs::path target = fs::path(options.cni_conf_dir) / "rdmanet.d" / "policy.json";
    std::error_code ec;
    if (fs::exists(target, ec)) return "";
    fs::create_directories(target.parent_path());
    base::write_file_atomically(target.string(), default_policy_file_content(mode_names()), 0644);
    return target.string();
}

}  // namespace

bool install_binary_atomic(const std::string& source, const std::string& target) {
    auto bytes = read_whole_file(source);
    if (!bytes) throw std::runtime_error("cannot read " + source);
    if (auto current = read_whole_file(target); current && *current == *bytes) return false;
    base::write_file_atomically(target, *bytes, 0755);
    return true;
}

std::string make_kubeconfig(const std::string& server, const std::string& ca_pem, const std::string& token,
                            const std::string& ns) {
    return "# Written by rdmanetctl install from the service account of the rdmanet DaemonSet;\n"
           "# rewritten when the token rotates. Used by rdmanet-ipam's kubernetes datastore.\n"
           "apiVersion: v1\n"
           "kind: Config\n"
           "clusters:\n"
           "- name: rdmanet\n"
           "  cluster:\n"
           "    server: \"" +
           yaml_safe(server, "the API server URL") +
           "\"\n"
           "    certificate-authority-data: \"" +
           ipam::kube::base64_encode(ca_pem) +
           "\"\n"
           "users:\n"
           "- name: rdmanet\n"
           "  user:\n"
           "    token: \"" +
           yaml_safe(token, "the service account token") +
           "\"\n"
           "contexts:\n"
           "- name: rdmanet\n"
           "  context:\n"
           "    cluster: rdmanet\n"
           "    user: rdmanet\n"
           "    namespace: \"" +
           yaml_safe(ns, "the IPAM namespace") +
           "\"\n"
           "current-context: rdmanet\n";
}

InstallReport install_once(const InstallOptions& options, std::ostream& out) {
    InstallReport report;
    if (!options.skip_binaries) {
        fs::create_directories(options.cni_bin_dir);
        for (const auto& name : options.binaries) {
            const auto source = (fs::path(options.source_dir) / name).string();
            const auto target = (fs::path(options.cni_bin_dir) / name).string();
            if (install_binary_atomic(source, target)) {
                report.binaries_replaced.push_back(name);
                out << "installed " << target << '\n';
            }
        }
    }
    if (!options.cni_conf_dir.empty()) {
        if (const auto written = install_policy_if_absent(options); !written.empty())
            out << "wrote " << written << " (the node policy's defaults: edit it; install never replaces it)\n";
    }
    // The node's name for node-slice IPAM (node_slice_size), from the DaemonSet's NODE_NAME
    // (fieldRef spec.nodeName): the plugin runs under the container runtime, not in this pod, so
    // it reads <cni conf dir>/rdmanet.d/nodename when $NODENAME is not set (whereabouts' rule).
    if (const std::string node = env_or_empty(options, "NODE_NAME"); !node.empty() && !options.cni_conf_dir.empty()) {
        const fs::path target = fs::path(options.cni_conf_dir) / "rdmanet.d" / "nodename";
        fs::create_directories(target.parent_path());
        if (write_if_changed(target.string(), node + "\n", 0644)) out << "wrote " << target.string() << '\n';
    }
    if (!options.service_account_dir.empty() && install_kubeconfig(options)) {
        report.kubeconfig_written = true;
        // The path only: the file holds a bearer token.
        out << "wrote " << (fs::path(options.cni_conf_dir) / options.kubeconfig_rel).string() << '\n';
    }
    if (install_modprobe(options)) {
        report.modprobe_written = true;
        out << "wrote " << (fs::path(options.modprobe_dir) / kModprobeConfName).string() << " (RDMA netns mode "
            << options.rdma_netns_mode << " from the next boot)\n";
    }
    out.flush();
    return report;
}

int install(const InstallOptions& options, std::ostream& out, std::ostream& err) {
    // Watching is the DaemonSet container's PID 1: SIGTERM (pod deletion, rollout) ends it at the
    // next wait, with 0, instead of the kubelet's SIGKILL after the grace period.
    std::optional<node::StopSignal> stop;
    if (options.watch && !options.wait) stop.emplace();
    auto wait = options.wait ? options.wait : [&stop](std::chrono::seconds s) { return stop->wait(s); };
    for (unsigned round = 1;; ++round) {
        try {
            install_once(options, out);
        } catch (const std::exception& e) {
            err << "rdmanetctl install: " << e.what() << '\n';
            // Once: the init container must fail visibly. Watching: keep trying, the next round
            // may find the token or the directory back.
            if (!options.watch) return 1;
        }
        if (!options.watch || (options.max_rounds && round >= options.max_rounds)) return 0;
        if (wait(options.interval)) {
            out << "rdmanetctl install: stopping (SIGTERM)\n";
            out.flush();
            return 0;
        }
    }
}

}  // namespace rdmanet::cni::cli
