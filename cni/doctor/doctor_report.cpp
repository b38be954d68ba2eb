// rdmanetctl doctor: the report (table or JSON, exit status) and the optional API probe.
#include <fstream>
#include <iomanip>
#include <iterator>
#include <ostream>

#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/doctor/doctor.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/api.hpp"
#include "rdmanet/ipam/kube/wire.hpp"

namespace rdmanet::cni::doctor {

using json = nlohmann::json;

namespace {

const char* status_name(Status s) {
    switch (s) {
    case Status::ok: return "ok";
    case Status::warn: return "warn";
    case Status::fail: return "FAIL";
    }
    return "?";
}

}  // namespace

std::string probe_api_server(const ipam::kube::KubeConfig& config, std::chrono::milliseconds timeout) {
    using namespace ipam::kube;
    // The IPAM's own client (TLS verification, retries on 5xx/429/connection failures within the
    // timeout), so a passing probe means the plugin's requests would pass too.
    const std::string path = collection_path(config.namespace_, kPools) + "?limit=1";
    long status = 0;
    try {
        KubeApi api(config, Deadline::in(timeout));
        status = api.call("GET", path).status;
    } catch (const ipam::IpamError& e) {
        return e.msg;
    }
    switch (status) {
    case 200: return "";
    case 401: return "HTTP 401: the token is not accepted (expired or from a deleted service account)";
    case 403:
        return "HTTP 403: RBAC does not let this service account list ippools in " + config.namespace_ +
               " (check the rdmanet ClusterRole/ClusterRoleBinding)";
    case 404: return "HTTP 404: the whereabouts.cni.cncf.io CRDs are not installed (kubectl apply -k deploy/)";
    default: return "HTTP " + std::to_string(status);
    }
}

json findings_json(const std::vector<Finding>& findings) {
    json checks = json::array();
    bool ok = true;
    for (const auto& f : findings) {
        checks.push_back({{"check", f.check},
                          {"status", status_name(f.status) == std::string("FAIL") ? "fail" : status_name(f.status)},
                          {"subject", f.subject},
                          {"message", f.message}});
        ok = ok && f.status != Status::fail;
    }
    return {{"ok", ok}, {"checks", checks}};
}

int run_doctor(const DoctorOptions& options, std::ostream& out, std::ostream& err) {
    std::vector<Finding> findings;
    try {
        findings = doctor_checks(options);
    } catch (const std::exception& e) {
        err << "rdmanetctl doctor: " << e.what() << '\n';
        return 2;
    }
    std::size_t fails = 0, warns = 0;
    for (const auto& f : findings) {
        fails += f.status == Status::fail;
        warns += f.status == Status::warn;
    }
    if (options.json) {
        json report = findings_json(findings);
        // The effective node policy, as the plugin will apply it (policy file or built-in defaults).
        const auto policy_file = std::filesystem::path(options.root) /
                                 std::filesystem::path(options.cni_conf_dir).relative_path() / "rdmanet.d" /
                                 "policy.json";
        std::ifstream in(policy_file, std::ios::binary);
        try {
            report["policy"] =
                in ? policy_to_json(parse_node_policy(std::string(std::istreambuf_iterator<char>(in), {}),
                                                      policy_file.string(), mode_names()),
                                    mode_names())
                   : policy_to_json(NodePolicy{}, mode_names());
        } catch (const std::exception&) {
            report["policy"] = nullptr;  // reported as a failed node.policy check
        }
        out << report.dump(2) << '\n';
    } else {
        std::size_t check_w = 5, subject_w = 7;
        for (const auto& f : findings) {
            check_w = std::max(check_w, f.check.size());
            subject_w = std::max(subject_w, std::min<std::size_t>(f.subject.size(), 48));
        }
        out << std::left << std::setw(8) << "STATUS" << std::setw(static_cast<int>(check_w + 2)) << "CHECK"
            << std::setw(static_cast<int>(subject_w + 2)) << "SUBJECT"
            << "DETAILS\n";
        for (const auto& f : findings) {
            out << std::left << std::setw(8) << status_name(f.status) << std::setw(static_cast<int>(check_w + 2))
                << f.check << std::setw(static_cast<int>(subject_w)) << f.subject << "  " << f.message << '\n';
        }
        out << '\n'
            << (fails ? std::to_string(fails) + " problem(s)" : std::string("no problems")) << ", " << warns
            << " warning(s)\n";
    }
    return fails ? 1 : 0;
}

}  // namespace rdmanet::cni::doctor
