// rdmanetctl doctor: the report (table or JSON, exit status) and the optional API probe.
#include <curl/curl.h>

#include <fstream>
#include <iomanip>
#include <iterator>
#include <memory>
#include <ostream>

#include "rdmanet/cni/ctl_admin.hpp"
#include "rdmanet/cni/policy.hpp"

namespace rdmanet::cni::ctl {

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

std::optional<std::string> base64_std_decode(const std::string& in) {
    std::string out;
    unsigned buffer = 0;
    int bits = 0;
    for (char c : in) {
        int v;
        if (c >= 'A' && c <= 'Z') v = c - 'A';
        else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
        else if (c >= '0' && c <= '9') v = c - '0' + 52;
        else if (c == '+') v = 62;
        else if (c == '/') v = 63;
        else if (c == '=' || c == '\n' || c == '\r') continue;
        else return std::nullopt;
        buffer = buffer << 6 | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>(buffer >> bits & 0xff);
        }
    }
    return out;
}

// obj[key] by reference (null when absent): never a temporary, pointers into it stay valid.
const json& member(const json& obj, const char* key) {
    static const json kNull;
    if (!obj.is_object()) return kNull;
    auto it = obj.find(key);
    return it == obj.end() ? kNull : *it;
}

const json* named(const json& list, const std::string& name, const char* field) {
    if (!list.is_array()) return nullptr;
    for (const auto& item : list)
        if (item.is_object() && item.value("name", json("")) == name && item.contains(field)) return &item[field];
    return nullptr;
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::string probe_api_server(const json& kc, std::chrono::milliseconds timeout) {
    const std::string current = kc.value("current-context", "");
    const json* context = named(member(kc, "contexts"), current, "context");
    if (!context) return "no current context";
    const json* cluster = named(member(kc, "clusters"), context->value("cluster", ""), "cluster");
    const json* user = named(member(kc, "users"), context->value("user", ""), "user");
    if (!cluster || !user) return "context names an unknown cluster or user";
    std::string ns = context->value("namespace", "");
    if (ns.empty()) ns = "kube-system";
    std::string token = user->value("token", "");
    if (token.empty() && user->contains("tokenFile")) token = read_all(user->value("tokenFile", ""));
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();

    std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
    if (!curl) return "curl_easy_init failed";
    const std::string url = cluster->value("server", "") + "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/" + ns +
                            "/ippools?limit=1";
    curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "https");
    std::string ca;
    if (cluster->contains("certificate-authority-data"))
        ca = base64_std_decode(cluster->value("certificate-authority-data", "")).value_or("");
    else if (cluster->contains("certificate-authority"))
        ca = read_all(cluster->value("certificate-authority", ""));
    curl_blob ca_blob{ca.data(), ca.size(), CURL_BLOB_NOCOPY};
    if (!ca.empty()) curl_easy_setopt(curl.get(), CURLOPT_CAINFO_BLOB, &ca_blob);
    std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(nullptr, curl_slist_free_all);
    const std::string auth = "Authorization: Bearer " + token;
    if (!token.empty()) headers.reset(curl_slist_append(nullptr, auth.c_str()));
    if (headers) curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
    std::string body;
    curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION,
                     +[](char* p, size_t size, size_t n, void* out) {
                         auto* s = static_cast<std::string*>(out);
                         if (s->size() < 4096) s->append(p, size * n);
                         return size * n;
                     });
    curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
    const CURLcode rc = curl_easy_perform(curl.get());
    if (rc != CURLE_OK) return url.substr(0, url.find("/apis")) + ": " + curl_easy_strerror(rc);
    long status = 0;
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
    switch (status) {
        case 200: return "";
        case 401: return "HTTP 401: the token is not accepted (expired or from a deleted service account)";
        case 403: return "HTTP 403: RBAC does not let this service account list ippools in " + ns +
                         " (check the rdmanet ClusterRole/ClusterRoleBinding)";
        case 404: return "HTTP 404: the whereabouts.cni.cncf.io CRDs are not installed (kubectl apply -k deploy/)";
        default: return "HTTP " + std::to_string(status);
    }
}

json findings_json(const std::vector<Finding>& findings) {
    json checks = json::array();
    bool ok = true;
    for (const auto& f : findings) {
        checks.push_back({{"check", f.check}, {"status", status_name(f.status) == std::string("FAIL") ? "fail" : status_name(f.status)},
                          {"subject", f.subject}, {"message", f.message}});
        ok = ok && f.status != Status::fail;
    }
    return {{"ok", ok}, {"checks", checks}};
}

int doctor(const DoctorOptions& options, std::ostream& out, std::ostream& err) {
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
            report["policy"] = in ? policy_to_json(parse_node_policy(
                                        std::string(std::istreambuf_iterator<char>(in), {}), policy_file.string()))
                                  : policy_to_json(NodePolicy{});
        } catch (const std::exception&) {
            report["policy"] = nullptr;   // reported as a failed node.policy check
        }
        out << report.dump(2) << '\n';
    } else {
        std::size_t check_w = 5, subject_w = 7;
        for (const auto& f : findings) {
            check_w = std::max(check_w, f.check.size());
            subject_w = std::max(subject_w, std::min<std::size_t>(f.subject.size(), 48));
        }
        out << std::left << std::setw(8) << "STATUS" << std::setw(static_cast<int>(check_w + 2)) << "CHECK"
            << std::setw(static_cast<int>(subject_w + 2)) << "SUBJECT" << "DETAILS\n";
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

}  // namespace rdmanet::cni::ctl
