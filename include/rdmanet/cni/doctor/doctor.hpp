#pragma once
// rdmanetctl doctor: the node checks (RDMA ports and netns mode, VFs, CNI binaries and config,
// the IPAM kubeconfig and node slices). Plain functions writing to `out`/`err` and returning the
// exit status; the CLI11 wiring is cni/main/ctl_admin.hpp. Every path it reads comes from the
// options (a root to read under), so tests run it against temporary trees.
#include <chrono>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"

namespace rdmanet::netns {
class VfControl;
}

namespace rdmanet::cni::doctor {

struct DoctorOptions {
    std::string root = "/";  // every path below is read under it
    std::string cni_bin_dir = "/opt/cni/bin";
    std::string cni_conf_dir = "/etc/cni/net.d";
    std::string kubeconfig;                                          // "" = <cni_conf_dir>/rdmanet.d/rdmanet.kubeconfig
    std::string ipam_data_dir = std::string(ipam::kDefaultDataDir);  // node slices: <it>/kubernetes/slices
    std::map<std::string, unsigned> expect_vfs;                      // PF netdev -> VFs the node should have
    std::string expect_netns_mode;                                   // "" | exclusive | shared
    bool check_api = false;                                          // reach the API server with the kubeconfig
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
    std::string check;  // rdma.ports, rdma.netns, sriov.vfs, cni.binary, cni.config, ipam.kubeconfig,
                        // ipam.slices, ipam.slices.backlog, runtime.memlock
    Status status;
    std::string subject;  // what it is about ("mlx5_0 port 1", "/etc/containerd/config.toml")
    std::string message;  // what was found and, when not ok, what to do
};

std::vector<Finding> doctor_checks(const DoctorOptions& options);
// GET the IPPool list of the kubeconfig's namespace (limit 1) with its credentials: proves the
// server is reachable, the CA matches, the token is accepted and RBAC allows it. "" = fine.
std::string probe_api_server(const ipam::kube::KubeConfig& kubeconfig, std::chrono::milliseconds timeout);
nlohmann::json findings_json(const std::vector<Finding>& findings);
int run_doctor(const DoctorOptions& options, std::ostream& out, std::ostream& err);

}  // namespace rdmanet::cni::doctor
