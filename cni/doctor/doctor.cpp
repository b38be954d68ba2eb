// rdmanetctl doctor: the checks. Each reads files under options.root only (sysfs, /etc, the CNI
// dirs), so tests build a fake node tree; nothing here changes the node.
//
// The problem classes are the ones that cost RDMA users days: ports that are Down (or
// INIT: no subnet manager), an RDMA netns mode set at runtime that a reboot undoes, VFs not
// created, the plugin or its config missing, an IPAM kubeconfig that is malformed or whose token
// expired, and a container runtime that keeps RLIMIT_MEMLOCK at 64 KiB ("Couldn't allocate MR").
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/cli/install.hpp"
#include "rdmanet/cni/doctor/doctor.hpp"
#include "rdmanet/cni/translate/render.hpp"
#include "rdmanet/cni/cli/rdma.hpp"
#include "rdmanet/cni/cli/pool.hpp"
#include "rdmanet/cni/cli/slices.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/doctor/tuning_allowlist.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/access_denied_record.hpp"
#include "rdmanet/ipam/kube/base64.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"
#include "rdmanet/ipam/kube/slice_store.hpp"
#include "rdmanet/netns/vf.hpp"
#include "rdmanet/base/json_limits.hpp"

namespace rdmanet::cni::doctor {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Below this a pod without IPC_LOCK cannot register useful RDMA buffers.
constexpr std::uint64_t kMemlockFloor = 64ull << 20;
constexpr std::uint64_t kUnlimited = ~0ull;

struct Doctor {
    const DoctorOptions& o;
    std::vector<Finding> findings;

    fs::path under(const std::string& path) const {
        fs::path p(path);
        return fs::path(o.root) / p.relative_path();
    }
    // A path below --root as the node sees it (the prefix removed).
    std::string node_path(std::string path) const {
        const std::string root = fs::path(o.root).lexically_normal().string();
        if (root != "/" && path.rfind(root, 0) == 0 && path.size() > root.size() &&
            (root.back() == '/' || path[root.size()] == '/'))
            path = path.substr(root.back() == '/' ? root.size() - 1 : root.size());
        return path;
    }
    void add(std::string check, Status status, std::string subject, std::string message) {
        // Subjects are node paths: the --root prefix is not part of them.
        findings.push_back({std::move(check), status, node_path(std::move(subject)), std::move(message)});
    }
};

std::optional<std::string> read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string first_line(std::string s) {
    if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
    while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

std::vector<fs::path> sorted_entries(const fs::path& dir) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->path());
    std::sort(out.begin(), out.end());
    return out;
}

std::string human_bytes(std::uint64_t v) {
    if (v == kUnlimited) return "unlimited";
    if (v >= (1ull << 30) && v % (1ull << 30) == 0) return std::to_string(v >> 30) + " GiB";
    if (v >= (1ull << 20) && v % (1ull << 20) == 0) return std::to_string(v >> 20) + " MiB";
    if (v >= 1024 && v % 1024 == 0) return std::to_string(v >> 10) + " KiB";
    return std::to_string(v) + " bytes";
}

// ---- the node's sysfs ------------------------------------------------------------------------

// In a container, --root is where the host is mounted: without the host's /sys there, every
// sysfs check below would describe an empty node ("no RDMA devices") instead of the real one.
void check_sysfs_visible(Doctor& d) {
    const auto netdevs = sorted_entries(d.under("/sys/class/net"));
    if (netdevs.empty()) {
        d.add("node.sysfs", Status::fail, "/sys",
              "no network interface under " + d.under("/sys/class/net").string() +
                  ": the node's sysfs is not visible here, so the RDMA and VF checks cannot see the node; mount "
                  "the host's /sys read-only at " +
                  d.under("/sys").string() + " (the DaemonSet's installer container has it at /host/sys)");
        return;
    }
    std::string names;
    for (std::size_t i = 0; i < netdevs.size() && i < 8; ++i) names += (i ? ", " : "") + netdevs[i].filename().string();
    if (netdevs.size() > 8) names += ", ...";
    d.add("node.sysfs", Status::ok, "/sys", std::to_string(netdevs.size()) + " network interface(s): " + names);
}

// ---- RDMA devices and ports -----------------------------------------------------------------

bool check_rdma_ports(Doctor& d) {
    const auto ib = d.under("/sys/class/infiniband");
    const auto devices = sorted_entries(ib);
    if (devices.empty()) {
        d.add("rdma.ports", Status::warn, "/sys/class/infiniband",
              "no RDMA devices: the RDMA driver (mlx5_ib, ...) is not loaded or the node has no RDMA "
              "NIC; macvlan/hostdev still work, but pods get no RDMA");
        return false;
    }
    for (const auto& dev : devices) {
        const auto name = dev.filename().string();
        auto ports = sorted_entries(dev / "ports");
        if (ports.empty()) d.add("rdma.ports", Status::warn, name, "device has no ports in sysfs");
        for (const auto& port : ports) {
            const auto subject = name + " port " + port.filename().string();
            const auto state = first_line(read_text(port / "state").value_or("?"));
            const auto phys = first_line(read_text(port / "phys_state").value_or("?"));
            const auto layer = first_line(read_text(port / "link_layer").value_or("?"));
            // sysfs writes "4: ACTIVE", "1: DOWN", "2: INIT"; phys_state "5: LinkUp", "3: Disabled".
            const auto detail = "state " + state + ", phys_state " + phys + ", link_layer " + layer;
            if (state.find("ACTIVE") != std::string::npos) {
                d.add("rdma.ports", Status::ok, subject, detail);
            } else if (state.find("INIT") != std::string::npos || state.find("ARMED") != std::string::npos) {
                d.add("rdma.ports", Status::fail, subject,
                      detail +
                          ": the link is up but no subnet manager has configured the port; start "
                          "opensm on the fabric or check the switch's SM");
            } else {
                d.add("rdma.ports", Status::fail, subject,
                      detail +
                          ": port is down; check the cable, the switch port and the link "
                          "(ibstat / rdma link show)");
            }
        }
    }
    return true;
}

// ---- RDMA netns mode and its persistence ----------------------------------------------------

// The boot setting as modprobe and the kernel would read it on this node (below --root).
cli::BootNetnsMode persisted_netns_mode(const Doctor& d) {
    std::vector<std::string> dirs;
    for (const auto& dir : cli::kSystemModprobeDirs) dirs.push_back(d.under(dir).string());
    dirs.push_back(d.under("/etc/modprobe.d").string());
    cli::BootNetnsMode boot = cli::boot_netns_mode(dirs, d.under("/proc/cmdline").string());
    boot.source = d.node_path(boot.source);
    return boot;
}

std::string mode_of(const std::string& value) {
    const auto mode = cli::netns_mode_param(value);
    return mode ? std::string(netns::rdma_netns_mode_name(*mode)) : "";
}

void check_netns_mode(Doctor& d, bool have_rdma) {
    const auto param = d.under("/sys/module/ib_core/parameters/netns_mode");
    auto raw = read_text(param);
    if (!raw) {
        d.add("rdma.netns", have_rdma ? Status::warn : Status::ok, "ib_core",
              have_rdma ? "cannot read " + param.string() + " (kernel without RDMA netns support?)"
                        : "ib_core is not loaded");
        return;
    }
    // The parameter follows `rdma system set netns`, so it is the current mode.
    const auto current = mode_of(first_line(*raw));
    const auto persisted = persisted_netns_mode(d);
    const auto boot = persisted.value.empty() ? std::string("shared") : mode_of(persisted.value);
    const std::string where =
        persisted.value.empty() ? "no modprobe.d option (kernel default: shared)" : persisted.source;
    std::string message = "current mode " + current + "; at boot " + boot + " (" + where + ")";
    if (!d.o.expect_netns_mode.empty() && current != d.o.expect_netns_mode) {
        d.add("rdma.netns", Status::fail, "ib_core netns_mode",
              message + ": this node should run " + d.o.expect_netns_mode +
                  "; it can only change while no RDMA device is in use: run `rdmanetctl install "
                  "--rdma-netns-mode " +
                  d.o.expect_netns_mode + "` and reboot");
        return;
    }
    if (boot != current) {
        d.add("rdma.netns", Status::fail, "ib_core netns_mode",
              message + ": a reboot switches the node to " + boot +
                  " mode; persist it with `options ib_core "
                  "netns_mode=" +
                  (current == "exclusive" ? "0" : "1") + "` in /etc/modprobe.d (rdmanetctl install --rdma-netns-mode " +
                  current + ")");
        return;
    }
    // What the mode means for the attachments, by the registry's RDMA property of each mode.
    d.add("rdma.netns", Status::ok, "ib_core netns_mode",
          message + (current == "shared"
                         ? "; pods see every RDMA device (exclusive mode gives " +
                               mode_list(ModeRdma::isolated_in_exclusive_mode) + " attachments their own; " +
                               mode_list(ModeRdma::shared_with_host) + " share their master's in either mode)"
                         : ""));
}

// ---- SR-IOV VFs -----------------------------------------------------------------------------

// "mac 0a:58:..., vlan 100 qos 3, spoofchk off, trust on, link_state auto, max_tx_rate 100 Mbps"
std::string describe_vf(const netns::VfInfo& vf) {
    std::string text = "mac " + vf.mac + ", vlan " + std::to_string(vf.vlan);
    if (vf.vlan != 0) {
        text += " qos " + std::to_string(vf.qos);
        if (vf.vlan_proto == netns::kVlanProto8021AD) text += " proto 802.1ad";
    }
    if (vf.spoofchk) text += std::string(", spoofchk ") + (*vf.spoofchk ? "on" : "off");
    if (vf.trust) text += std::string(", trust ") + (*vf.trust ? "on" : "off");
    text += ", link_state ";
    text += vf.link_state == netns::VfLinkState::enable    ? "enable"
            : vf.link_state == netns::VfLinkState::disable ? "disable"
                                                           : "auto";
    if (vf.min_tx_rate) text += ", min_tx_rate " + std::to_string(vf.min_tx_rate) + " Mbps";
    if (vf.max_tx_rate) text += ", max_tx_rate " + std::to_string(vf.max_tx_rate) + " Mbps";
    if (vf.node_guid) text += ", node_guid " + netns::format_guid(*vf.node_guid);
    if (vf.port_guid) text += ", port_guid " + netns::format_guid(*vf.port_guid);
    return text;
}

// One finding per VF of `pf`: its PCI address (device/virtfn<N>) and PF-side settings, so an
// admin sees what a pod left behind or what the SR-IOV operator set.
void report_vf_settings(Doctor& d, const fs::path& netdev, const std::string& pf) {
    if (!d.o.vf_control && fs::path(d.o.root).lexically_normal() != fs::path("/")) return;
    std::vector<netns::VfInfo> list;
    try {
        std::unique_ptr<netns::VfControl> owned;
        netns::VfControl* vfs = d.o.vf_control;
        if (!vfs) {
            owned = netns::make_netlink_vf_control();
            vfs = owned.get();
        }
        list = vfs->list(pf);
    } catch (const std::exception& e) {
        d.add("sriov.vf", Status::warn, pf, std::string("cannot read the VFs' settings: ") + e.what());
        return;
    }
    for (const auto& vf : list) {
        std::error_code ec;
        const auto target = fs::read_symlink(netdev / "device" / ("virtfn" + std::to_string(vf.index)), ec);
        const std::string pci = ec ? "" : " (" + target.filename().string() + ")";
        d.add("sriov.vf", Status::ok, pf + " vf " + std::to_string(vf.index) + pci, describe_vf(vf));
    }
}

void check_vfs(Doctor& d) {
    std::set<std::string> seen;
    for (const auto& netdev : sorted_entries(d.under("/sys/class/net"))) {
        const auto total_text = read_text(netdev / "device" / "sriov_totalvfs");
        if (!total_text) continue;
        const auto pf = netdev.filename().string();
        seen.insert(pf);
        const auto total = std::strtoul(first_line(*total_text).c_str(), nullptr, 10);
        const auto num =
            std::strtoul(first_line(read_text(netdev / "device" / "sriov_numvfs").value_or("0")).c_str(), nullptr, 10);
        const auto counts = std::to_string(num) + " of " + std::to_string(total) + " VFs configured";
        auto expected = d.o.expect_vfs.find(pf);
        if (expected == d.o.expect_vfs.end()) {
            d.add("sriov.vfs", Status::ok, pf, counts);
        } else if (expected->second > total) {
            d.add(
                "sriov.vfs", Status::fail, pf,
                counts + ", " + std::to_string(expected->second) +
                    " requested: more than the device supports "
                    "(raise NUM_OF_VFS in the firmware: mlxconfig -d <pci> set SRIOV_EN=1 NUM_OF_VFS=N, then reboot)");
        } else if (num != expected->second) {
            d.add("sriov.vfs", Status::fail, pf,
                  counts + ", " + std::to_string(expected->second) + " requested: echo 0 > /sys/class/net/" + pf +
                      "/device/sriov_numvfs; echo " + std::to_string(expected->second) + " > /sys/class/net/" + pf +
                      "/device/sriov_numvfs (or let the SR-IOV operator / a boot unit do it)");
        } else {
            d.add("sriov.vfs", Status::ok, pf, counts + " as requested");
        }
        if (num > 0) report_vf_settings(d, netdev, pf);
    }
    for (const auto& [pf, n] : d.o.expect_vfs)
        if (!seen.count(pf))
            d.add("sriov.vfs", Status::fail, pf,
                  std::to_string(n) + " VFs requested, but " + pf +
                      " is not an SR-IOV capable netdev on this node (no device/sriov_totalvfs)");
}

// ---- CNI binaries and configs ---------------------------------------------------------------

void check_binaries(Doctor& d) {
    for (const char* name : {"rdmanet", "rdmanet-ipam"}) {
        const auto path = d.under(d.o.cni_bin_dir) / name;
        struct stat st {};
        const bool required = std::string(name) == "rdmanet";
        if (::stat(path.c_str(), &st) != 0) {
            d.add("cni.binary", required ? Status::fail : Status::warn, path.string(),
                  std::string("missing: deploy the rdmanet DaemonSet (kubectl apply -k deploy/) or run "
                              "rdmanetctl install") +
                      (required ? "" : "; only needed when another CNI uses \"ipam\": {\"type\": \"rdmanet-ipam\"}"));
        } else if (!S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0) {
            d.add("cni.binary", Status::fail, path.string(), "not an executable file: chmod 0755 it or reinstall");
        } else if (st.st_mode & 0022) {
            d.add("cni.binary", Status::fail, path.string(),
                  "writable by group or others: every pod's network runs it as root; chmod 0755");
        } else {
            d.add("cni.binary", Status::ok, path.string(), "installed (" + std::to_string(st.st_size) + " bytes)");
        }
    }
}

void check_configs(Doctor& d) {
    const auto dir = d.under(d.o.cni_conf_dir);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        d.add("cni.config", Status::fail, dir.string(), "the CNI config directory does not exist");
        return;
    }
    unsigned ours = 0;
    for (const auto& file : sorted_entries(dir)) {
        const auto ext = file.extension().string();
        if (ext != ".conf" && ext != ".conflist" && ext != ".json") continue;
        const auto text = read_text(file).value_or("");
        if (text.find("rdmanet") == std::string::npos) continue;
        ++ours;
        auto parsed = base::parse_json_limited(text);
        auto& config = parsed.value;
        if (!parsed) {
            d.add("cni.config", Status::fail, file.string(), "not valid JSON: " + parsed.error);
            continue;
        }
        // A config declaring the deviceID capability gets its device from Multus at ADD time.
        const bool device_from_runtime = text.find("\"deviceID\"") != std::string::npos;
        try {
            translate::validate_cni_config(config, device_from_runtime ? "0000:00:00.0" : "");
            d.add("cni.config", Status::ok, file.string(), "valid");
        } catch (const std::exception& e) {
            d.add("cni.config", Status::fail, file.string(), e.what());
        }
    }
    if (ours == 0)
        d.add("cni.config", Status::ok, dir.string(),
              "no rdmanet config files (networks come from NetworkAttachmentDefinitions through Multus)");
}

// Reported whether or not the CNI config dir exists: the defaults apply either way.
void check_policy(Doctor& d) {
    const auto policy_file = d.under(d.o.cni_conf_dir) / "rdmanet.d" / "policy.json";
    if (auto text = read_text(policy_file)) {
        try {
            auto policy = parse_node_policy(*text, policy_file.string(), mode_names());
            const auto j = policy_to_json(policy, mode_names());
            d.add("node.policy", Status::ok, policy_file.string(),
                  "modes " + j["modes"].dump() + ", logDir " + policy.log_dir);
        } catch (const Error& e) {
            d.add("node.policy", Status::fail, policy_file.string(),
                  e.msg() + ": every ADD on this node fails until the file is fixed");
        }
    } else {
        d.add("node.policy", Status::warn, policy_file.string(),
              "no policy file: built-in defaults apply (rdmanetctl install writes one to edit)");
    }
}

// tuning's allowlist limits only a chained tuning: rdmanet's "sysctl" keys are limited by the
// node policy's "sysctls" globs. Said when the file exists, with its entries as globs.
void check_tuning_allowlist(Doctor& d) {
    const auto file = d.under("/etc/cni/tuning/allowlist.conf");
    const auto text = read_text(file);
    if (!text) return;
    const auto t = doctor::translate_tuning_allowlist(*text);
    std::string message =
        "limits a chained tuning only; rdmanet's sysctl keys are limited by the node policy's "
        "\"sysctls\" (rdmanet does not read this file)";
    if (!t.globs.empty()) message += ": the same limit there is \"sysctls\": " + json(t.globs).dump();
    if (!t.untranslated.empty())
        message += (t.globs.empty() ? ": " : "; ") +
                   std::string("not interface keys rdmanet sets (or no simple glob): ") + json(t.untranslated).dump();
    d.add("cni.tuning-allowlist", Status::warn, file.string(), message);
}

// ---- IPAM kubeconfig ------------------------------------------------------------------------
// Judged by the IPAM's own reader (ipam/kube/kubeconfig.hpp), so doctor and the plugin cannot
// disagree about whether it is usable; doctor then adds what the reader accepts but an admin
// should hear about.

// The files a kubeconfig names, read below --root like every other node path.
class RootedFiles : public ipam::kube::FileReader {
public:
    explicit RootedFiles(const Doctor& d) : d_(d) {}
    std::string read(const std::string& path, const std::string& what) const override {
        auto text = read_text(d_.under(path));
        if (!text) ipam::config_error(what + " " + path + " is not readable");
        return *text;
    }

private:
    const Doctor& d_;
};

// Seconds until a service-account JWT expires (negative: expired); nullopt when not a JWT.
std::optional<std::int64_t> jwt_seconds_left(const std::string& token) {
    const auto dot1 = token.find('.');
    const auto dot2 = dot1 == std::string::npos ? dot1 : token.find('.', dot1 + 1);
    if (dot2 == std::string::npos) return std::nullopt;
    auto payload = ipam::kube::base64_decode(token.substr(dot1 + 1, dot2 - dot1 - 1), ipam::kube::Base64Alphabet::url);
    auto claims = payload ? base::parse_json_limited(*payload).value : json();
    if (!claims.is_object() || !claims.contains("exp") || !claims["exp"].is_number()) return std::nullopt;
    const auto now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    return claims["exp"].get<std::int64_t>() - now;
}

// What the IPAM would accept but the admin should fix (empty = nothing).
std::vector<std::string> kubeconfig_warnings(const ipam::kube::KubeConfig& c) {
    std::vector<std::string> problems;
    if (c.server.rfind("https://", 0) != 0)
        problems.push_back("cluster server \"" + c.server + "\" is not an https:// URL");
    if (c.insecure_skip_tls_verify)
        problems.push_back("insecure-skip-tls-verify is set: the API server is not authenticated");
    if (!c.ca_pem.empty() && c.ca_pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
        problems.push_back("the certificate authority is not a PEM certificate");
    if (c.token.empty() && c.client_cert_pem.empty())
        problems.push_back("the user has no token and no client certificate");
    // A service-account token: report expiry (the installer's --watch rewrites it on rotation).
    if (auto left = jwt_seconds_left(c.token); left && *left <= 0)
        problems.push_back("the token expired " + std::to_string(-*left / 60) +
                           " minutes ago: the installer container (rdmanetctl install --watch) is "
                           "not running or cannot read the service account");
    return problems;
}

// Returns the kubeconfig when --check-api reached the API server with it (for the slice check).
std::optional<ipam::kube::KubeConfig> check_kubeconfig(Doctor& d) {
    const std::string path =
        d.o.kubeconfig.empty() ? (fs::path(d.o.cni_conf_dir) / cli::kKubeconfigRelPath).string() : d.o.kubeconfig;
    const auto file = d.under(path);
    auto text = read_text(file);
    if (!text) {
        d.add("ipam.kubeconfig", Status::warn, path,
              "missing: only the kubernetes datastore needs it; the DaemonSet's installer writes it");
        return std::nullopt;
    }
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && (st.st_mode & 0077))
        d.add("ipam.kubeconfig", Status::fail, path, "readable by group or others, and it holds a token: chmod 0600");
    ipam::kube::KubeConfig config;
    try {
        config = ipam::kube::parse_kubeconfig(*text, path, RootedFiles(d));
    } catch (const ipam::IpamError& e) {
        d.add("ipam.kubeconfig", Status::fail, path, e.msg);
        return std::nullopt;
    }
    const auto problems = kubeconfig_warnings(config);
    if (!problems.empty()) {
        std::string all;
        for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
        d.add("ipam.kubeconfig", Status::fail, path, all);
        return std::nullopt;
    }
    if (!d.o.check_api) {
        d.add("ipam.kubeconfig", Status::ok, path, "valid (API reachability not checked: --check-api)");
        return std::nullopt;
    }
    const auto problem =
        d.o.probe_api ? d.o.probe_api(config, d.o.api_timeout) : probe_api_server(config, d.o.api_timeout);
    if (problem.empty()) {
        d.add("ipam.kubeconfig", Status::ok, path, "valid; the API server answered");
        return config;
    }
    d.add("ipam.kubeconfig", Status::fail, path, "valid, but the API server is not reachable: " + problem);
    return std::nullopt;
}

// ---- nv-ipam pools (ipam.poolName) --------------------------------------------------------------
// The node's block or subnet of each nv-ipam pool it used, from its cached copy: OK with the
// block, gateway, used/free and who wrote it; WARN when a block is full (the next ADD fails).

void check_nv_blocks(Doctor& d) {
    const std::string data_dir = d.under(d.o.ipam_data_dir).string();
    std::vector<cli::NvBlockUsage> usage;
    try {
        usage = cli::nv_block_usage(data_dir);
    } catch (const std::exception& e) {
        d.add("ipam.nvipam", Status::warn, data_dir,
              std::string("the node's nv-ipam blocks could not be read: ") + e.what());
        return;
    }
    for (const auto& u : usage) {
        const std::string text = "node " + u.node + " holds " + u.block +
                                 (u.gateway.empty() ? "" : " gateway " + u.gateway) + ", " + std::to_string(u.used) +
                                 " used, " + std::to_string(u.free) + " free, from " + u.source;
        d.add("ipam.nvipam", u.free == 0 ? Status::warn : Status::ok, u.pool,
              u.free == 0 ? text + ": the block is full" : text);
    }
}

// ---- node slices (node_slice_size) ------------------------------------------------------------
// A node that allocates from a slice the NodeSlicePool gives to another node hands out addresses
// that node hands out too: FAIL. Changes the API server has not taken yet are expected during an
// outage, but the slice IPPools are stale until they are published: WARN with their age.

void check_slices(Doctor& d, const std::optional<ipam::kube::KubeConfig>& api) {
    const std::string data_dir = d.under(d.o.ipam_data_dir).string();
    const cli::SlicesReport r =
        cli::slices_report(ipam::kube::slices_dir(data_dir), api, d.o.api_timeout, std::chrono::system_clock::now());
    // The API server refused this node's credentials (401/403) in its last node-slice CNI call or
    // agent pass: no ADD succeeds and releases are not published until an admin fixes them.
    if (const auto denied = ipam::kube::read_access_denied(ipam::kube::slices_dir(data_dir))) {
        const auto age =
            std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                .count() -
            denied->unix_time;
        d.add("ipam.kube.credentials", Status::fail, ipam::kube::slices_dir(data_dir) + "/access-denied.json",
              "the Kubernetes API server refused this node's credentials " +
                  std::to_string(std::max<long long>(age, 0)) + " s ago: " + denied->message +
                  " (node-slice ADDs fail until fixed; the record goes away with the next accepted request)");
    }
    if (r.pools.empty() && r.backlog.changes == 0 && r.backlog.error.empty() && r.local_error.empty())
        return;  // not in node-slice mode
    if (!r.local_error.empty()) {
        d.add("ipam.slices", Status::warn, r.slices_dir, "the node's local store could not be read: " + r.local_error);
    }
    if (!r.api_error.empty()) {
        d.add("ipam.slices", Status::warn, r.slices_dir,
              "NodeSlicePools not read, this node's own record only: " + r.api_error);
    }
    const std::string not_read = api             ? ""
                                 : d.o.check_api ? " (NodeSlicePool not read: the API server not reachable)"
                                                 : " (NodeSlicePool not read: --check-api)";
    for (const auto& p : r.pools) {
        if (p.node.empty()) continue;  // another network's pool, this node holds nothing of it
        const std::string subject = "NodeSlicePool " + p.name + " (node " + p.node + ")";
        std::string held, revoked;
        for (const auto& s : p.slices) {
            const std::string used = s.local_used ? std::to_string(*s.local_used) + " used" : "no local store";
            if (s.state == "held") {
                held += (held.empty() ? "" : ", ") + s.slice + " (" + used +
                        (s.free.empty() ? "" : ", " + s.free + " free") + ")";
            } else if (s.state == "revoked" && (!s.revoked_locally || s.local_used.value_or(0) > 0)) {
                revoked += (revoked.empty() ? "" : "; ") + s.slice + " is " +
                           (s.node.empty() || s.node == p.node ? std::string("no longer this node's")
                                                               : "now node " + s.node + "'s") +
                           (s.revoked_locally ? " (this node stopped allocating from it, " + used + ")"
                                              : " but this node still allocates from it (" + used + ")");
            }
        }
        if (!revoked.empty()) {
            d.add("ipam.slices", Status::fail, subject,
                  "revoked: " + revoked +
                      ": pods with addresses from it can collide with the new holder's; "
                      "delete and re-create them (their DEL releases the addresses here) and check that the node name "
                      "($NODENAME) did not change");
        } else {
            d.add("ipam.slices", Status::ok, subject,
                  held.empty() ? std::string("holds no slice") : "holds " + held + not_read);
        }
    }
    if (!r.backlog.error.empty()) {
        d.add("ipam.slices.backlog", Status::fail, r.backlog.dir, r.backlog.error + ": remove the marker or fix it");
    } else if (r.backlog.changes > 0) {
        d.add("ipam.slices.backlog", Status::warn, r.backlog.dir,
              std::to_string(r.backlog.changes) + " change(s) not published to the slice IPPools" +
                  (r.backlog.oldest_age ? ", oldest " + std::to_string(r.backlog.oldest_age->count()) + " s ago" : "") +
                  ": the API server did not take them yet; the next CNI call on this node or the node agent "
                  "publishes them (check the API server's reachability: --check-api)");
    } else {
        d.add("ipam.slices.backlog", Status::ok, r.backlog.dir, "empty: every change is published");
    }
}

// ---- container runtime memlock --------------------------------------------------------------

std::optional<std::uint64_t> rlimit_value(const json& v) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer()) return v.get<std::int64_t>() < 0 ? kUnlimited : v.get<std::uint64_t>();
    return std::nullopt;
}

void judge_memlock(Doctor& d, const std::string& subject, std::uint64_t soft, const std::string& fix) {
    const auto text = "RLIMIT_MEMLOCK " + human_bytes(soft);
    if (soft == kUnlimited)
        d.add("runtime.memlock", Status::ok, subject, text);
    else if (soft < kMemlockFloor)
        d.add("runtime.memlock", Status::fail, subject,
              text + ": RDMA memory registration fails (\"Couldn't allocate MR\") in pods without IPC_LOCK; " + fix);
    else
        d.add("runtime.memlock", Status::warn, subject, text + ": caps registered memory per pod; " + fix);
}

void check_containerd(Doctor& d) {
    const auto config = d.under("/etc/containerd/config.toml");
    auto toml = read_text(config);
    if (!toml) return;
    static const std::regex kBase(R"(^\s*base_runtime_spec\s*=\s*["']([^"']+)["'])");
    const std::string fix =
        "set {\"type\":\"RLIMIT_MEMLOCK\",\"hard\":18446744073709551615,\"soft\":18446744073709551615} in "
        "process.rlimits of the base_runtime_spec file and restart containerd";
    std::istringstream in(*toml);
    bool found = false;
    std::smatch m;
    for (std::string line; std::getline(in, line);) {
        if (!std::regex_search(line, m, kBase)) continue;
        found = true;
        const auto spec_path = m[1].str();
        auto parsed = base::parse_json_limited(read_text(d.under(spec_path)).value_or(""));
        auto& spec = parsed.value;
        if (!parsed) {
            d.add("runtime.memlock", Status::fail, spec_path,
                  "containerd's base_runtime_spec is missing or not JSON: containerd cannot start pods");
            continue;
        }
        const json* rlimit = nullptr;
        if (spec.contains("process") && spec["process"].contains("rlimits") && spec["process"]["rlimits"].is_array())
            for (const auto& r : spec["process"]["rlimits"])
                if (r.is_object() && r.value("type", "") == "RLIMIT_MEMLOCK") rlimit = &r;
        if (!rlimit) {
            d.add("runtime.memlock", Status::warn, spec_path,
                  "base_runtime_spec has no RLIMIT_MEMLOCK: pods inherit containerd's own limit "
                  "(LimitMEMLOCK of containerd.service); " +
                      fix);
            continue;
        }
        auto soft = rlimit_value(rlimit->value("soft", json()));
        if (!soft) {
            d.add("runtime.memlock", Status::fail, spec_path, "RLIMIT_MEMLOCK soft is not a number");
            continue;
        }
        judge_memlock(d, spec_path, *soft, fix);
    }
    if (found) return;
    // No base spec: runc applies no rlimit and pods inherit the containerd service's limit.
    static const std::regex kLimit(R"(^\s*LimitMEMLOCK\s*=\s*(\S+))");
    std::string limit, source;
    std::vector<fs::path> units = {d.under("/lib/systemd/system/containerd.service"),
                                   d.under("/usr/lib/systemd/system/containerd.service"),
                                   d.under("/etc/systemd/system/containerd.service")};
    for (const auto& f : sorted_entries(d.under("/etc/systemd/system/containerd.service.d"))) units.push_back(f);
    for (const auto& unit : units) {
        std::istringstream u(read_text(unit).value_or(""));
        for (std::string line; std::getline(u, line);)
            if (std::regex_search(line, m, kLimit)) limit = m[1].str(), source = unit.string();
    }
    const std::string unit_fix = "add LimitMEMLOCK=infinity to a containerd.service drop-in, or a base_runtime_spec";
    if (limit.empty())
        d.add("runtime.memlock", Status::warn, config.string(),
              "no base_runtime_spec and no LimitMEMLOCK: pods inherit systemd's DefaultLimitMEMLOCK (64 KiB before "
              "systemd 253, Debian 12 included); " +
                  unit_fix);
    else if (limit == "infinity")
        d.add("runtime.memlock", Status::ok, source, "containerd runs with LimitMEMLOCK=infinity (pods inherit it)");
    else
        judge_memlock(d, source, std::strtoull(limit.c_str(), nullptr, 10), unit_fix);
}

void check_dockerd(Doctor& d) {
    const auto path = d.under("/etc/docker/daemon.json");
    auto text = read_text(path);
    if (!text) return;
    auto parsed = base::parse_json_limited(*text);
    auto& config = parsed.value;
    const std::string fix =
        "set \"default-ulimits\": {\"memlock\": {\"Name\": \"memlock\", \"Hard\": -1, \"Soft\": -1}} "
        "in /etc/docker/daemon.json and restart dockerd";
    if (!parsed) {
        d.add("runtime.memlock", Status::fail, path.string(),
              "not valid JSON: dockerd does not start (" + parsed.error + ")");
        return;
    }
    const json ulimits = config.value("default-ulimits", json::object());
    if (!ulimits.is_object() || !ulimits.contains("memlock")) {
        d.add("runtime.memlock", Status::warn, path.string(),
              "no default-ulimits memlock: containers inherit dockerd's limit; " + fix);
        return;
    }
    auto soft = rlimit_value(ulimits["memlock"].value("Soft", json()));
    if (!soft) {
        d.add("runtime.memlock", Status::fail, path.string(), "default-ulimits.memlock.Soft is not a number");
        return;
    }
    judge_memlock(d, path.string(), *soft, fix);
}

void check_crio(Doctor& d) {
    std::vector<fs::path> files = {d.under("/etc/crio/crio.conf")};
    for (const auto& f : sorted_entries(d.under("/etc/crio/crio.conf.d"))) files.push_back(f);
    static const std::regex kMemlock(R"(memlock=(-?\d+):(-?\d+))");
    bool any = false;
    std::smatch m;
    for (const auto& f : files) {
        auto text = read_text(f);
        if (!text) continue;
        any = true;
        if (std::regex_search(*text, m, kMemlock)) {
            const auto soft = m[1].str() == "-1" ? kUnlimited : std::strtoull(m[1].str().c_str(), nullptr, 10);
            judge_memlock(d, f.string(), soft, "set default_ulimits = [\"memlock=-1:-1\"] in crio.conf");
            return;
        }
    }
    if (any)
        d.add("runtime.memlock", Status::warn, "/etc/crio",
              "no memlock in default_ulimits: pods inherit CRI-O's limit; set default_ulimits = [\"memlock=-1:-1\"]");
}

void check_memlock(Doctor& d) {
    const auto before = d.findings.size();
    check_containerd(d);
    check_dockerd(d);
    check_crio(d);
    if (d.findings.size() == before)
        d.add("runtime.memlock", Status::warn, "container runtime",
              "no containerd, dockerd or CRI-O configuration found under " + d.o.root +
                  ": cannot tell the pods' RLIMIT_MEMLOCK");
}

}  // namespace

std::vector<Finding> doctor_checks(const DoctorOptions& options) {
    Doctor d{options, {}};
    check_sysfs_visible(d);
    const bool have_rdma = check_rdma_ports(d);
    check_netns_mode(d, have_rdma);
    check_vfs(d);
    check_binaries(d);
    check_configs(d);
    check_policy(d);
    check_tuning_allowlist(d);
    const auto api = check_kubeconfig(d);
    check_slices(d, api);
    check_nv_blocks(d);
    check_memlock(d);
    return d.findings;
}

}  // namespace rdmanet::cni::doctor
