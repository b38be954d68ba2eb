// A real kube-apiserver + etcd for tests: see real_apiserver.hpp.
#include "real_apiserver.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "rdmanet/cni/translate/render.hpp"
#include "support/build_paths.hpp"

namespace apiserver_test {

namespace fs = std::filesystem;

namespace {

std::string env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

bool executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

std::string in_path(const std::string& name) {
    std::istringstream path(env_or_empty("PATH"));
    for (std::string d; std::getline(path, d, ':');) {
        if (!d.empty() && executable(d + "/" + name)) return d + "/" + name;
    }
    return "";
}

// A port of 127.0.0.1 that was free a moment ago (the kernel's choice for port 0).
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket failed");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ::close(fd);
        throw std::runtime_error("cannot find a free port on 127.0.0.1");
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

bool alive(pid_t pid) {
    int status = 0;
    return pid > 0 && waitpid(pid, &status, WNOHANG) == 0;
}

std::string tail(const std::string& path, std::size_t bytes = 3000) {
    const std::string text = read_text(path);
    return text.size() > bytes ? "..." + text.substr(text.size() - bytes) : text;
}

// The REST collection an object of a deploy/ manifest is created in.
std::string collection_path(const json& obj) {
    const std::string kind = obj.value("kind", "");
    const std::string ns = obj.contains("metadata") ? obj["metadata"].value("namespace", "") : "";
    if (kind == "Namespace") return "/api/v1/namespaces";
    if (kind == "CustomResourceDefinition") return "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    if (kind == "ServiceAccount") return "/api/v1/namespaces/" + ns + "/serviceaccounts";
    if (kind == "ClusterRole") return "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    if (kind == "ClusterRoleBinding") return "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
    if (kind == "Role") return "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/roles";
    if (kind == "RoleBinding") return "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings";
    throw std::runtime_error("real_apiserver: no collection known for kind \"" + kind + "\"");
}

const char* const kWhereaboutsPlurals[] = {"ippools", "overlappingrangeipreservations", "nodeslicepools"};
const std::string kWhereabouts = "/apis/whereabouts.cni.cncf.io/v1alpha1";
// nv-ipam's pools: rdmanet-ipam's other datastore (ipam.poolName). Their CRDs are in deploy/crds/
// but outside kustomization.yaml (a cluster with nv-ipam has them already); the test server
// applies them too.
const char* const kNvIpamPlurals[] = {"ippools", "cidrpools"};
const std::string kNvIpam = "/apis/nv-ipam.nvidia.com/v1alpha1";

}  // namespace

std::optional<RealBinaries> find_real_binaries(std::string* why_not) {
    auto fail = [&](const std::string& why) -> std::optional<RealBinaries> {
        if (why_not) *why_not = why;
        return std::nullopt;
    };
    const std::string assets = env_or_empty("KUBEBUILDER_ASSETS");
    if (!assets.empty()) {
        RealBinaries b{assets + "/kube-apiserver", assets + "/etcd"};
        if (!executable(b.kube_apiserver))
            return fail("KUBEBUILDER_ASSETS=" + assets + " has no executable kube-apiserver");
        if (!executable(b.etcd)) return fail("KUBEBUILDER_ASSETS=" + assets + " has no executable etcd");
        return b;
    }
    RealBinaries b{env_or_empty("RDMANET_KUBE_APISERVER"), env_or_empty("RDMANET_ETCD")};
    if (b.kube_apiserver.empty()) {
        // The peers built by tests/peers/build_peers.sh (exported by tests/peers/peer_env.sh).
        const std::string kube = env_or_empty("RDMANET_PEER_KUBE_1_37");
        const std::string etcd = env_or_empty("RDMANET_PEER_ETCD");
        if (!kube.empty() && !etcd.empty()) {
            RealBinaries peers{kube + "/kube-apiserver", etcd + "/etcd"};
            if (!executable(peers.kube_apiserver))
                return fail("RDMANET_PEER_KUBE_1_37=" + kube + " has no executable kube-apiserver");
            if (!executable(peers.etcd)) return fail("RDMANET_PEER_ETCD=" + etcd + " has no executable etcd");
            return peers;
        }
        return fail(
            "no kube-apiserver: set KUBEBUILDER_ASSETS (a directory with kube-apiserver and etcd), "
            "RDMANET_KUBE_APISERVER, or build the peers (tests/peers/build_peers.sh etcd kube-1.37; "
            ". tests/peers/peer_env.sh)");
    }
    if (!executable(b.kube_apiserver)) return fail("RDMANET_KUBE_APISERVER=" + b.kube_apiserver + " is not executable");
    if (b.etcd.empty()) {
        const std::string peer = env_or_empty("RDMANET_PEER_ETCD");
        b.etcd = peer.empty() ? in_path("etcd") : peer + "/etcd";
    }
    if (!executable(b.etcd)) return fail("no etcd: set RDMANET_ETCD or build the etcd peer");
    return b;
}

KubeVersion kube_apiserver_version(const std::string& kube_apiserver, const std::string& scratch_log) {
    // `kube-apiserver --version` prints "Kubernetes v1.37.2"; a build without the release's
    // version stamped in says "v0.0.0-master+...", read as the newest.
    std::error_code ec;
    fs::remove(scratch_log, ec);
    run_or_throw({kube_apiserver, "--version"}, scratch_log);
    KubeVersion v;
    v.text = read_text(scratch_log);
    while (!v.text.empty() && (v.text.back() == '\n' || v.text.back() == '\r')) v.text.pop_back();
    std::smatch m;
    static const std::regex re(R"(v([0-9]+)\.([0-9]+))");
    if (std::regex_search(v.text, m, re) && m[1] != "0") {
        v.major = std::stoi(m[1]);
        v.minor = std::stoi(m[2]);
    }
    return v;
}

bool real_server_selected() { return env_or_empty("RDMANET_TEST_APISERVER") == "real"; }

void skip_unless_real_binaries() {
    if (!real_server_selected()) return;
    std::string why;
    if (find_real_binaries(&why)) return;
    // Under CI (CI set, as CI does) a missing server is a failure: CI runs this suite on purpose.
    const bool ci = !env_or_empty("CI").empty();
    const std::string word = ci ? "FAILED" : "SKIPPED";
    std::cerr << word << ": the real kube-apiserver suite cannot run: " << why << "\n";
    std::cout << word << ": the real kube-apiserver suite cannot run: " << why << std::endl;
    std::_Exit(ci ? 1 : kSkipExitCode);
}

namespace {
// Before main: a test program linking this file and run with RDMANET_TEST_APISERVER=real exits
// with kSkipExitCode when it cannot have a real server (see skip_unless_real_binaries).
const bool skip_checked = (skip_unless_real_binaries(), true);
}  // namespace

RealApiServer::RealApiServer(RealServerOptions options) {
    std::string why;
    const auto bin = find_real_binaries(&why);
    if (!bin) throw std::runtime_error(why);
    std::string tmpl = (fs::temp_directory_path() / "rdmanet-real-apiserver-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    try {
        make_test_pki(dir_);
        version_ = kube_apiserver_version(bin->kube_apiserver, dir_ + "/version.log");
        // Which server a run was against belongs in its log (each kubereal entry prints it once).
        std::cerr << "real kube-apiserver: " << bin->kube_apiserver << ": " << version_.text
                  << (version_.major ? "" : " (no release version: read as the newest)") << "; etcd: " << bin->etcd
                  << "\n";
        start_etcd(*bin);
        start_apiserver(*bin);
        wait_ready();
        if (options.project_manifests) apply_project_manifests(options.crds);
    } catch (...) {
        stop_process(apiserver_pid_);
        stop_process(etcd_pid_);
        std::error_code ec;
        fs::remove_all(dir_, ec);
        throw;
    }
}

RealApiServer::~RealApiServer() {
    stop_process(apiserver_pid_);
    stop_process(etcd_pid_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

RealApiServer& RealApiServer::shared() {
    static std::unique_ptr<RealApiServer> server;
    if (!server) server = std::make_unique<RealApiServer>();
    return *server;
}

void RealApiServer::start_etcd(const RealBinaries& bin) {
    etcd_port_ = free_port();
    const int peer = free_port();
    const std::string client = "http://127.0.0.1:" + std::to_string(etcd_port_);
    etcd_pid_ = spawn_logged(
        {bin.etcd, "--name", "rdmanet-test", "--data-dir", dir_ + "/etcd", "--listen-client-urls", client,
         "--advertise-client-urls", client, "--listen-peer-urls", "http://127.0.0.1:" + std::to_string(peer),
         "--initial-advertise-peer-urls", "http://127.0.0.1:" + std::to_string(peer), "--initial-cluster",
         "rdmanet-test=http://127.0.0.1:" + std::to_string(peer)},
        dir_ + "/etcd.log");
}

void RealApiServer::start_apiserver(const RealBinaries& bin) {
    run_or_throw(
        {"openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", dir_ + "/sa.key"},
        dir_ + "/openssl.log");
    // token,user,uid,"group,group": an admin, and what the API server would make of the rdmanet
    // service account's own token.
    std::ofstream(dir_ + "/tokens.csv") << admin_token_ << ",rdmanet-test-admin,admin-uid,\"system:masters\"\n"
                                        << rdmanet_token_
                                        << ",system:serviceaccount:rdmanet-system:rdmanet,rdmanet-sa-uid,"
                                        << "\"system:serviceaccounts,system:serviceaccounts:rdmanet-system\"\n"
                                        << forbidden_token()
                                        << ",system:serviceaccount:rdmanet-system:forbidden,forbidden-uid,"
                                        << "\"system:serviceaccounts,system:serviceaccounts:rdmanet-system\"\n";
    port_ = free_port();
    std::vector<std::string> argv{
        bin.kube_apiserver,
        "--etcd-servers=http://127.0.0.1:" + std::to_string(etcd_port_),
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        "--secure-port=" + std::to_string(port_),
        "--tls-cert-file=" + dir_ + "/server.crt",
        "--tls-private-key-file=" + dir_ + "/server.key",
        "--client-ca-file=" + dir_ + "/ca.crt",
        "--token-auth-file=" + dir_ + "/tokens.csv",
        "--authorization-mode=RBAC",
        "--service-account-key-file=" + dir_ + "/sa.key",
        "--service-account-signing-key-file=" + dir_ + "/sa.key",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--endpoint-reconciler-type=none",
        "--enable-admission-plugins=NamespaceLifecycle",
        "--disable-admission-plugins=LimitRanger,ServiceAccount,TaintNodesByCondition,Priority,"
        "DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,PersistentVolumeClaimResize,"
        "RuntimeClass,CertificateApproval,CertificateSigning,CertificateSubjectRestriction,DefaultIngressClass,"
        "MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota",
        "--profiling=false",
        "--cert-dir=" + dir_ + "/certs"};
    // The plain-HTTP port existed until 1.23 and was on by default (8080): closed there. From
    // 1.24 on the flag is gone and the server refuses to start with it.
    if (version_.major == 1 && version_.minor < 24) argv.push_back("--insecure-port=0");
    apiserver_pid_ = spawn_logged(argv, dir_ + "/kube-apiserver.log");
}

void RealApiServer::wait_ready() const {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (std::chrono::steady_clock::now() < give_up) {
        if (!alive(etcd_pid_)) throw std::runtime_error("etcd exited at start: " + tail(dir_ + "/etcd.log"));
        if (!alive(apiserver_pid_))
            throw std::runtime_error("kube-apiserver exited at start: " + tail(dir_ + "/kube-apiserver.log"));
        try {
            if (request("GET", "/readyz").status == 200) return;
        } catch (const std::exception&) {
            // not listening yet
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    throw std::runtime_error("kube-apiserver not ready within 90 s: " + tail(dir_ + "/kube-apiserver.log"));
}

void RealApiServer::create_from_yaml(const std::string& path) const {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    const std::string text{std::istreambuf_iterator<char>(in), {}};
    for (const json& obj : rdmanet::cni::translate::yaml_documents_to_json(text)) {
        if (!obj.is_object()) continue;
        const auto r = request("POST", collection_path(obj), obj.dump());
        if (r.status != 201 && r.status != 409)
            throw std::runtime_error("creating " + obj.value("kind", "") + " from " + path + ": " +
                                     std::to_string(r.status) + " " + r.text);
    }
}

void RealApiServer::apply_project_manifests(bool crds) const {
    const std::string deploy = rdmanet::test::source_dir() + "/deploy";
    create_from_yaml(deploy + "/namespace.yaml");
    if (crds) {
        for (const char* f :
             {"whereabouts.cni.cncf.io_ippools.yaml", "whereabouts.cni.cncf.io_overlappingrangeipreservations.yaml",
              "whereabouts.cni.cncf.io_nodeslicepools.yaml", "nv-ipam.nvidia.com_ippools.yaml",
              "nv-ipam.nvidia.com_cidrpools.yaml"})
            create_from_yaml(deploy + "/crds/" + f);
    }
    create_from_yaml(deploy + "/rbac.yaml");
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    auto wait_for = [&](const std::string& what, auto&& done) {
        while (!done()) {
            if (std::chrono::steady_clock::now() > give_up)
                throw std::runtime_error("real API server: " + what + " within 60 s");
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    };
    if (crds) {
        // A CRD is usable once it is Established and its resources' storage is ready: until then
        // the server answers a request on them `429 storage is (re)initializing`. A cluster-wide
        // list answering 200 is that readiness, seen from outside.
        std::vector<std::pair<std::string, std::string>> crds_and_lists;  // CRD name, list path
        for (const char* plural : kWhereaboutsPlurals)
            crds_and_lists.emplace_back(std::string(plural) + ".whereabouts.cni.cncf.io", kWhereabouts + "/" + plural);
        for (const char* plural : kNvIpamPlurals)
            crds_and_lists.emplace_back(std::string(plural) + ".nv-ipam.nvidia.com", kNvIpam + "/" + plural);
        // Named copies, not structured bindings: clang 14 (the sanitizer build) cannot capture a
        // binding in a lambda.
        for (const auto& crd_and_list : crds_and_lists) {
            const std::string& crd = crd_and_list.first;
            const std::string& list = crd_and_list.second;
            wait_for(crd + " CRD not Established", [&] {
                auto r = request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + crd);
                if (r.status != 200) return false;
                for (const auto& c : r.body["status"].value("conditions", json::array()))
                    if (c.value("type", "") == "Established" && c.value("status", "") == "True") return true;
                return false;
            });
            wait_for("GET " + list + " does not answer 200", [&] { return request("GET", list).status == 200; });
        }
        wait_for("RBAC does not grant the rdmanet service account its IPPools", [&] {
            return request_as(rdmanet_token_, "GET", kWhereabouts + "/namespaces/kube-system/ippools").status == 200;
        });
        wait_for("RBAC does not grant the rdmanet service account nv-ipam's CIDRPools", [&] {
            return request_as(rdmanet_token_, "GET", kNvIpam + "/namespaces/kube-system/cidrpools").status == 200;
        });
    }
    wait_for("RBAC does not grant the rdmanet service account its nodes",
             [&] { return request_as(rdmanet_token_, "GET", "/api/v1/nodes").status == 200; });
}

HttpResult RealApiServer::request(const std::string& method, const std::string& path, const std::string& body,
                                  const std::string& content_type, const std::string& accept) const {
    return https_request(port_, ca_file(), admin_token_, method, path, body, content_type, accept);
}

HttpResult RealApiServer::request_as(const std::string& token, const std::string& method, const std::string& path,
                                     const std::string& body, const std::string& content_type) const {
    return https_request(port_, ca_file(), token, method, path, body, content_type, "");
}

void RealApiServer::ensure_namespace(const std::string& ns) const {
    if (request("GET", "/api/v1/namespaces/" + ns).status == 200) return;
    const json obj = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
    const auto r = request("POST", "/api/v1/namespaces", obj.dump());
    if (r.status != 201 && r.status != 409) throw std::runtime_error("creating namespace " + ns + ": " + r.text);
}

void RealApiServer::reset() const {
    auto delete_all = [&](const std::string& list_path, const std::string& item_prefix_api) {
        const auto r = request("GET", list_path);
        if (r.status == 404) return;  // group not served (no CRDs)
        if (r.status != 200) throw std::runtime_error("reset: GET " + list_path + ": " + r.text);
        for (const auto& item : r.body.value("items", json::array())) {
            const auto& md = item["metadata"];
            const std::string ns = md.value("namespace", "");
            const std::string path = item_prefix_api + (ns.empty() ? "" : "/namespaces/" + ns) + "/" +
                                     list_path.substr(list_path.rfind('/') + 1) + "/" + md.value("name", "");
            const auto d = request("DELETE", path, json{{"gracePeriodSeconds", 0}}.dump());
            if (d.status != 200 && d.status != 202 && d.status != 404)
                throw std::runtime_error("reset: DELETE " + path + ": " + d.text);
        }
    };
    for (const char* plural : kWhereaboutsPlurals) delete_all(kWhereabouts + "/" + plural, kWhereabouts);
    for (const char* plural : kNvIpamPlurals) delete_all(kNvIpam + "/" + plural, kNvIpam);
    delete_all("/api/v1/pods", "/api/v1");
    delete_all("/api/v1/nodes", "/api/v1");
    delete_all("/apis/resource.k8s.io/v1/resourceclaims", "/apis/resource.k8s.io/v1");
}

std::map<std::string, long> RealApiServer::request_counts() const {
    // Counters are bumped as a response completes, a moment after the client has it.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto r = request("GET", "/metrics", "", "application/json", "text/plain");
    if (r.status != 200) throw std::runtime_error("GET /metrics: " + std::to_string(r.status));
    // apiserver_request_total{code="200",component="apiserver",dry_run="",group="whereabouts.cni.cncf.io",
    //   resource="ippools",scope="resource",subresource="",verb="GET",version="v1alpha1"} 12
    static const std::regex line(R"re(^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$)re");
    static const std::regex label(R"re(([a-z_]+)="([^"]*)")re");
    // The in-repo server's method names: a list or watch is a GET, server-side apply a PATCH.
    static const std::map<std::string, std::string> method{
        {"GET", "GET"},     {"LIST", "GET"},      {"WATCH", "GET"},
        {"POST", "POST"},   {"PUT", "PUT"},       {"PATCH", "PATCH"},
        {"APPLY", "PATCH"}, {"DELETE", "DELETE"}, {"DELETECOLLECTION", "DELETE"}};
    std::map<std::string, long> out;
    std::istringstream in(r.text);
    for (std::string l; std::getline(in, l);) {
        std::smatch m;
        if (!std::regex_match(l, m, line)) continue;
        std::map<std::string, std::string> labels;
        const std::string text = m[1];
        for (auto it = std::sregex_iterator(text.begin(), text.end(), label); it != std::sregex_iterator(); ++it)
            labels[(*it)[1]] = (*it)[2];
        const bool counted =
            labels["group"] == "whereabouts.cni.cncf.io" || labels["group"] == "nv-ipam.nvidia.com" ||
            (labels["group"].empty() && (labels["resource"] == "pods" || labels["resource"] == "nodes"));
        const auto verb = method.find(labels["verb"]);
        if (!counted || verb == method.end()) continue;
        out[verb->second] += static_cast<long>(std::stod(m[2]));
    }
    return out;
}

}  // namespace apiserver_test
