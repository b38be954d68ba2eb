#pragma once
// The test API server as the tests and the benchmark use it: a private directory with a test CA
// and server certificate made by the openssl CLI, bin/test_apiserver started on a free port of
// 127.0.0.1 and stopped (by its PID) when the fixture goes away, kubeconfigs pointing at it, and
// a direct client for inspecting objects and steering faults.
#include <map>
#include <string>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

namespace apiserver_test {

using nlohmann::json;

struct ServerOptions {
    bool crds = true;  // false: the whereabouts group is not served (404)
    std::string token = "rdmanet-test-token";
    std::vector<std::string> extra_args{};  // e.g. {"--latency-ms", "2"}
};

struct KubeconfigOptions {
    std::string token{};    // "" = the server's token
    bool embed_ca = true;   // certificate-authority-data (else certificate-authority: file)
    std::string ca_file{};  // overrides the CA (wrong-CA tests)
    bool insecure = false;
    std::string ns{};         // context namespace ("" = unset: kube-system)
    bool token_file = false;  // tokenFile instead of token
};

struct HttpResult {
    int status = 0;
    json body;
    std::string text;  // the body as sent
};

// What the Kubernetes datastore tests need of an API server, whichever runs: the in-repo
// TestApiServer below or a real kube-apiserver + etcd (real_apiserver.hpp). Requests made through
// it carry an identity allowed everything; kubeconfigs it writes carry token() unless told otherwise.
class ApiServer {
public:
    virtual ~ApiServer() = default;

    virtual std::string url() const = 0;
    virtual std::string ca_file() const = 0;
    virtual const std::string& dir() const = 0;  // private directory, removed with the server
    // The token kubeconfigs carry by default: the in-repo server's one token; on a real server the
    // `rdmanet` service account's, so that everything the product does goes through deploy/rbac.yaml.
    virtual const std::string& token() const = 0;
    // A token the server authenticates as system:serviceaccount:rdmanet-system:forbidden, an
    // identity RBAC grants nothing (every API request 403).
    virtual std::string forbidden_token() const = 0;
    virtual bool is_real() const = 0;

    // Direct HTTPS request (TLS verified with the server's CA) as an identity allowed everything.
    virtual HttpResult request(const std::string& method, const std::string& path, const std::string& body = "",
                               const std::string& content_type = "application/json",
                               const std::string& accept = "") const = 0;
    // Makes namespace `ns` exist (a real server refuses objects in a namespace that does not).
    virtual void ensure_namespace(const std::string& ns) const { (void)ns; }

    // Writes a kubeconfig named `name` into the directory and returns its path.
    std::string write_kubeconfig(const std::string& name, const KubeconfigOptions& options = {}) const;

    // Convenience for whereabouts objects in `ns`.
    json list(const std::string& ns, const std::string& plural) const;  // items
    void create_pod(const std::string& ns, const std::string& name) const;
    // A pod scheduled to `node` (spec.nodeName); returns its metadata.uid.
    std::string create_pod_on(const std::string& ns, const std::string& name, const std::string& node) const;
    void delete_pod(const std::string& ns, const std::string& name) const;
    // resource.k8s.io/v1 ResourceClaims: create returns metadata.uid; delete returns the HTTP status.
    std::string create_resource_claim(const std::string& ns, const std::string& name) const;
    int delete_resource_claim(const std::string& ns, const std::string& name) const;
    // core/v1 Nodes (cluster-scoped): create returns metadata.uid; delete returns the HTTP status
    // (200, or 404 for a node that does not exist).
    std::string create_node(const std::string& name) const;
    int delete_node(const std::string& name) const;
};

// One HTTPS request to https://127.0.0.1:port (TLS verified with `ca_file`, bearer `token`).
HttpResult https_request(int port, const std::string& ca_file, const std::string& token, const std::string& method,
                         const std::string& path, const std::string& body, const std::string& content_type,
                         const std::string& accept);

class TestApiServer : public ApiServer {
public:
    explicit TestApiServer(ServerOptions options = {});
    ~TestApiServer() override;
    TestApiServer(const TestApiServer&) = delete;
    TestApiServer& operator=(const TestApiServer&) = delete;

    int port() const { return port_; }
    pid_t pid() const { return pid_; }
    std::string url() const override { return "https://127.0.0.1:" + std::to_string(port_); }
    const std::string& dir() const override { return dir_; }
    std::string ca_file() const override { return dir_ + "/ca.crt"; }
    const std::string& token() const override { return options_.token; }
    std::string forbidden_token() const override { return "rdmanet-test-forbidden-token"; }
    bool is_real() const override { return false; }

    HttpResult request(const std::string& method, const std::string& path, const std::string& body = "",
                       const std::string& content_type = "application/json",
                       const std::string& accept = "") const override;
    void set_faults(const json& faults) const;  // POST /_test/faults
    json stats() const;                         // GET /_test/stats

    // API-server outages, objects kept (main.cpp explains the modes): drop closes every API
    // request's connection unanswered, hang holds requests unanswered, off ends the outage;
    // endless, trickle, unauthorized and forbidden answer every API request that way.
    enum class Outage { off, drop, hang, endless, trickle, unauthorized, forbidden };
    void set_outage(Outage mode) const;
    // SIGSTOP/SIGCONT the server process: it accepts no request at all, control endpoints
    // included (the kernel still completes TCP handshakes into the listen backlog).
    void freeze(bool frozen) const;

private:
    ServerOptions options_;
    std::string dir_;
    int port_ = 0;
    pid_t pid_ = -1;
};

// Generates ca.crt/ca.key and server.crt/server.key (CN 127.0.0.1, subjectAltName `server_san`) in
// `dir` with the openssl CLI. `prefix` names the files ("" -> ca.*, server.*; "other-" ->
// other-ca.* ...).
void make_test_pki(const std::string& dir, const std::string& prefix = "",
                   const std::string& server_san = "IP:127.0.0.1");

std::string test_apiserver_path();

// Runs argv (argv[0] looked up in PATH, no shell), output appended to `log`; throws with the log
// when it fails.
void run_or_throw(const std::vector<std::string>& argv, const std::string& log);

// Starts argv[0] (an absolute path) in the background, stdout and stderr appended to `log`. The
// child gets SIGKILL when the thread that started it dies, so a crashed test leaves no server behind.
pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log);

// SIGTERM, up to 5 s, then SIGKILL; reaps the child.
void stop_process(pid_t pid);

std::string read_text(const std::string& path);

}  // namespace apiserver_test
