#pragma once
// A real kube-apiserver + etcd for tests, started and stopped by the test process:
//
//   auto found = apiserver_test::find_real_binaries();     // envtest's convention, see below
//   apiserver_test::RealApiServer server;                    // ~8 s on 2 vCPUs; throws on failure
//   std::string kc = server.write_kubeconfig("kubeconfig");  // the `rdmanet` service account
//   server.request("GET", "/api/v1/nodes");                  // as an admin (system:masters)
//
// What it sets up, in a private temporary directory removed at the end: etcd on two free ports
// of 127.0.0.1 (client, peer) with its data dir there; a test CA and a serving certificate with
// IP SAN 127.0.0.1 (the openssl CLI); a service-account signing key; a static token file with an
// admin (group system:masters), the identity of deploy/rbac.yaml's service account
// (system:serviceaccount:rdmanet-system:rdmanet) and one RBAC grants nothing (forbidden_token()); kube-apiserver on a free port of 127.0.0.1 with
// RBAC on and the admission plugins that 1.21 enabled by default off but NamespaceLifecycle
// (ServiceAccount admission would refuse every pod without a controller-manager; the ones later
// releases added, PodSecurity among them, stay on and admit what the tests create). Once /readyz answers, deploy/namespace.yaml,
// deploy/crds/*.yaml (nv-ipam's too, which kustomization.yaml leaves out) and deploy/rbac.yaml are
// created, each CRD waited on until Established and its list answers 200 (a fresh CRD answers
// `429 storage is (re)initializing` a moment longer), and the service account's access until
// RBAC grants it. Every wait polls with a deadline. The server's flags follow its version (read
// from `kube-apiserver --version` and logged): 1.21 to 1.23 need --insecure-port=0, 1.24 and
// later refuse it. Both processes are stopped by PID when the
// object goes away and get SIGKILL should the test process die first.
//
// Finding the binaries (the environment is read here and only here):
//   KUBEBUILDER_ASSETS         a directory with `kube-apiserver` and `etcd` (controller-runtime's
//                              envtest layout; `setup-envtest use -p path` prints one)
//   RDMANET_KUBE_APISERVER     else: the kube-apiserver binary ...
//   RDMANET_ETCD               ... and etcd (default: RDMANET_PEER_ETCD's, else `etcd` from PATH)
//   RDMANET_PEER_KUBE_1_37     else: the peers built by tests/peers/build_peers.sh
//   + RDMANET_PEER_ETCD        (`. tests/peers/peer_env.sh` exports them)
// tests/peers/kubereal.sh runs the suite once per tested Kubernetes version, each with its own
// KUBEBUILDER_ASSETS made from the peers. Without binaries, a test program must say so and skip
// (exit 77), or fail under CI: skip_unless_real_binaries() below does that for a whole program.
//
// Choosing the server for the shared test cases: RDMANET_TEST_APISERVER=real makes
// server_under_test.hpp's ServerUnderTest use RealApiServer::shared() (one per process).
#include <optional>
#include <string>

#include "fixture.hpp"

namespace apiserver_test {

struct RealBinaries {
    std::string kube_apiserver, etcd;
};

// The binaries by the convention above; std::nullopt with `why_not` saying what is missing.
std::optional<RealBinaries> find_real_binaries(std::string* why_not = nullptr);

// A kube-apiserver's version as `--version` prints it ("Kubernetes v1.37.2"); major and minor
// are 0 for a build without a release version stamped in.
struct KubeVersion {
    int major = 0, minor = 0;
    std::string text;
};
// Runs `kube_apiserver --version`, its output going to scratch_log; throws when it fails.
KubeVersion kube_apiserver_version(const std::string& kube_apiserver, const std::string& scratch_log);

// true when RDMANET_TEST_APISERVER=real: the shared test cases run against a real server.
bool real_server_selected();

// For a test program run with RDMANET_TEST_APISERVER=real: when no binaries are found, prints why
// and exits the process with kSkipExitCode before any test runs (ctest's SKIP_RETURN_CODE), so
// the run counts as skipped, never as passed; with CI set in the environment it exits 1 instead
// (CI runs this suite on purpose: a missing server there is a failure). Runs by itself before main in every program that
// links real_apiserver.cpp.
inline constexpr int kSkipExitCode = 77;
void skip_unless_real_binaries();

struct RealServerOptions {
    bool crds = true;  // false: deploy/crds/ not applied (the whereabouts group is not served: 404)
    // false: nothing of deploy/ is created (no namespace, CRDs or RBAC): an empty cluster, for a
    // test that creates the manifests itself (the Helm chart's).
    bool project_manifests = true;
};

class RealApiServer : public ApiServer {
public:
    explicit RealApiServer(RealServerOptions options = {});  // throws when a binary is missing or fails
    ~RealApiServer() override;
    RealApiServer(const RealApiServer&) = delete;
    RealApiServer& operator=(const RealApiServer&) = delete;

    // One server per process, started on first use and stopped at exit.
    static RealApiServer& shared();

    std::string url() const override { return "https://127.0.0.1:" + std::to_string(port_); }
    std::string ca_file() const override { return dir_ + "/ca.crt"; }
    const std::string& dir() const override { return dir_; }
    const std::string& token() const override { return rdmanet_token_; }  // the service account
    std::string forbidden_token() const override { return "rdmanet-real-forbidden-token"; }
    bool is_real() const override { return true; }
    const std::string& admin_token() const { return admin_token_; }
    int port() const { return port_; }
    pid_t apiserver_pid() const { return apiserver_pid_; }
    pid_t etcd_pid() const { return etcd_pid_; }
    const KubeVersion& version() const { return version_; }

    HttpResult request(const std::string& method, const std::string& path, const std::string& body = "",
                       const std::string& content_type = "application/json",
                       const std::string& accept = "") const override;  // as the admin
    // As any bearer token (the service account's: what RBAC allows the product).
    HttpResult request_as(const std::string& token, const std::string& method, const std::string& path,
                          const std::string& body = "", const std::string& content_type = "application/json") const;
    void ensure_namespace(const std::string& ns) const override;

    // Creates every object of a YAML file (namespaces, CRDs, service accounts, RBAC objects);
    // objects that exist already are left as they are.
    void create_from_yaml(const std::string& path) const;

    // Back to the state after start: every IPPool, OverlappingRangeIPReservation and NodeSlicePool,
    // nv-ipam IPPool and CIDRPool, pod and node deleted (namespaces stay). For test cases sharing one server.
    void reset() const;

    // Requests served so far on whereabouts' and nv-ipam's resources (status included), pods and
    // nodes, by method as the in-repo
    // server counts them (a list or watch is a GET), from the server's own apiserver_request_total
    // in /metrics; the admin's requests are counted too. Compare before and after an operation.
    std::map<std::string, long> request_counts() const;

private:
    void start_etcd(const RealBinaries& bin);
    void start_apiserver(const RealBinaries& bin);
    void wait_ready() const;
    void apply_project_manifests(bool crds) const;

    std::string dir_;
    std::string admin_token_ = "rdmanet-real-admin-token";
    std::string rdmanet_token_ = "rdmanet-real-sa-token";
    KubeVersion version_;
    int etcd_port_ = 0, port_ = 0;
    pid_t etcd_pid_ = -1, apiserver_pid_ = -1;
};

}  // namespace apiserver_test
