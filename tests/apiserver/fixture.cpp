// Test API server fixture: see fixture.hpp.
#include "fixture.hpp"
#include "support/build_paths.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <httplib.h>

namespace apiserver_test {

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

namespace {

std::string base64(const std::string& in) {
    static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    unsigned val = 0;
    int bits = -6;
    for (unsigned char c : in) {
        val = (val << 8) + c;
        bits += 8;
        while (bits >= 0) {
            out.push_back(t[(val >> bits) & 0x3f]);
            bits -= 6;
        }
    }
    if (bits > -6) out.push_back(t[((val << 8) >> (bits + 8)) & 0x3f]);
    while (out.size() % 4) out.push_back('=');
    return out;
}

}  // namespace

// In a forked child: stdout and stderr to `log` (appended), then exec argv; never returns.
// search_path: look argv[0] up in PATH (execvp) instead of taking it as a path (execv).
[[noreturn]] static void exec_logged_child(const std::vector<std::string>& argv, const std::string& log,
                                           bool search_path) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (search_path)
        execvp(args[0], args.data());
    else
        execv(args[0], args.data());
    _exit(127);
}

void run_or_throw(const std::vector<std::string>& argv, const std::string& log) {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        exec_logged_child(argv, log, true);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        throw std::runtime_error(argv[0] + " failed: " + read_text(log));
    }
}

pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log) {
    const pid_t parent = ::getpid();
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) _exit(127);  // the parent died before prctl
        exec_logged_child(argv, log, false);
    }
    return pid;
}

void stop_process(pid_t pid) {
    if (pid <= 0) return;
    ::kill(pid, SIGTERM);
    int status = 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > give_up) {
            ::kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

std::string test_apiserver_path() { return rdmanet::test::bin_dir() + "/test_apiserver"; }

void make_test_pki(const std::string& dir, const std::string& prefix, const std::string& server_san) {
    const std::string log = dir + "/" + prefix + "openssl.log";
    const std::string ca = dir + "/" + prefix + "ca", srv = dir + "/" + prefix + "server";
    std::ofstream(dir + "/" + prefix + "san.ext") << "subjectAltName=" << server_san
                                                  << "\nbasicConstraints=CA:FALSE\n"
                                                     "extendedKeyUsage=serverAuth\n";
    run_or_throw({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                  "-keyout", ca + ".key", "-out", ca + ".crt", "-days", "2", "-subj", "/CN=rdmanet-test-ca-" + prefix},
                 log);
    run_or_throw({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                  srv + ".key", "-out", srv + ".csr", "-subj", "/CN=127.0.0.1"},
                 log);
    run_or_throw({"openssl", "x509", "-req", "-in", srv + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
                  "-CAcreateserial", "-out", srv + ".crt", "-days", "2", "-extfile", dir + "/" + prefix + "san.ext"},
                 log);
}

TestApiServer::TestApiServer(ServerOptions options) : options_(std::move(options)) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rdmanet-apiserver-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    make_test_pki(dir_);
    const std::string port_file = dir_ + "/port";
    std::vector<std::string> argv{test_apiserver_path(),
                                  "--port-file",
                                  port_file,
                                  "--cert",
                                  dir_ + "/server.crt",
                                  "--key",
                                  dir_ + "/server.key",
                                  "--token",
                                  options_.token,
                                  "--forbidden-token",
                                  forbidden_token()};
    if (!options_.crds) argv.push_back("--no-crds");
    argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
    const std::string log = dir_ + "/server.log";
    pid_ = spawn_logged(argv, log);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < give_up) {
        const std::string text = read_text(port_file);
        if (!text.empty()) {
            port_ = std::atoi(text.c_str());
            return;
        }
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("test_apiserver exited at start: " + read_text(log));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    throw std::runtime_error("test_apiserver did not start within 20 s: " + read_text(log));
}

TestApiServer::~TestApiServer() {
    stop_process(pid_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

std::string ApiServer::write_kubeconfig(const std::string& name, const KubeconfigOptions& o) const {
    const std::string path = dir() + "/" + name;
    const std::string token = o.token.empty() ? this->token() : o.token;
    std::ostringstream y;
    y << "apiVersion: v1\nkind: Config\ncurrent-context: test\nclusters:\n- name: test-cluster\n  cluster:\n"
      << "    server: " << url() << "\n";
    const std::string ca = o.ca_file.empty() ? ca_file() : o.ca_file;
    if (o.insecure) {
        y << "    insecure-skip-tls-verify: true\n";
    } else if (o.embed_ca) {
        y << "    certificate-authority-data: " << base64(read_text(ca)) << "\n";
    } else {
        y << "    certificate-authority: " << ca << "\n";
    }
    y << "users:\n- name: test-user\n  user:\n";
    if (o.token_file) {
        std::ofstream(path + ".token") << token << "\n";
        y << "    tokenFile: " << name << ".token\n";  // relative: resolved against the kubeconfig's directory
    } else {
        y << "    token: " << token << "\n";
    }
    y << "contexts:\n- name: test\n  context:\n    cluster: test-cluster\n    user: test-user\n";
    if (!o.ns.empty()) y << "    namespace: " << o.ns << "\n";
    std::ofstream(path) << y.str();
    ::chmod(path.c_str(), 0600);
    return path;
}

HttpResult https_request(int port, const std::string& ca_file, const std::string& token, const std::string& method,
                         const std::string& path, const std::string& body, const std::string& content_type,
                         const std::string& accept) {
    httplib::SSLClient cli("127.0.0.1", port);
    cli.set_ca_cert_path(ca_file.c_str());
    cli.enable_server_certificate_verification(true);
    cli.set_bearer_token_auth(token.c_str());
    cli.set_connection_timeout(5);
    cli.set_read_timeout(30);
    if (!accept.empty()) cli.set_default_headers({{"Accept", accept}});
    auto send = [&]() -> httplib::Result {
        if (method == "POST") return cli.Post(path.c_str(), body, content_type.c_str());
        if (method == "PUT") return cli.Put(path.c_str(), body, content_type.c_str());
        if (method == "PATCH") return cli.Patch(path.c_str(), body, content_type.c_str());
        if (method == "DELETE") return cli.Delete(path.c_str(), body, content_type.c_str());
        return cli.Get(path.c_str());
    };
    httplib::Result r = send();
    if (!r)
        throw std::runtime_error("API server request " + method + " " + path +
                                 " failed: " + httplib::to_string(r.error()));
    return {r->status, json::parse(r->body, nullptr, false), r->body};
}

HttpResult TestApiServer::request(const std::string& method, const std::string& path, const std::string& body,
                                  const std::string& content_type, const std::string& accept) const {
    return https_request(port_, ca_file(), options_.token, method, path, body, content_type, accept);
}

void TestApiServer::set_faults(const json& faults) const {
    auto r = request("POST", "/_test/faults", faults.dump());
    if (r.status != 200) throw std::runtime_error("setting faults failed");
}

json TestApiServer::stats() const { return request("GET", "/_test/stats").body; }

void TestApiServer::set_outage(Outage mode) const {
    static const char* const names[] = {"off", "drop", "hang", "endless", "trickle", "unauthorized", "forbidden"};
    const char* name = names[static_cast<int>(mode)];
    auto r = request("POST", "/_test/outage", json{{"mode", name}}.dump());
    if (r.status != 200) throw std::runtime_error(std::string("setting outage ") + name + " failed");
}

void TestApiServer::freeze(bool frozen) const {
    if (::kill(pid_, frozen ? SIGSTOP : SIGCONT) != 0) throw std::runtime_error("cannot signal the test API server");
}

json ApiServer::list(const std::string& ns, const std::string& plural) const {
    auto r = request("GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/" + ns + "/" + plural);
    if (r.status != 200) throw std::runtime_error("list " + plural + " failed: " + r.body.dump());
    return r.body["items"];
}

void ApiServer::create_pod(const std::string& ns, const std::string& name) const {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
    ensure_namespace(ns);
    auto r = request("POST", "/api/v1/namespaces/" + ns + "/pods", pod.dump());
    if (r.status != 201) throw std::runtime_error("create pod failed: " + r.body.dump());
}

std::string ApiServer::create_pod_on(const std::string& ns, const std::string& name, const std::string& node) const {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"spec", {{"nodeName", node}, {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
    ensure_namespace(ns);
    auto r = request("POST", "/api/v1/namespaces/" + ns + "/pods", pod.dump());
    if (r.status != 201) throw std::runtime_error("create pod failed: " + r.body.dump());
    return r.body["metadata"].value("uid", "");
}

void ApiServer::delete_pod(const std::string& ns, const std::string& name) const {
    // Grace period 0: a pod bound to a node would otherwise stay (terminating) for 30 s waiting
    // for a kubelet that does not exist.
    request("DELETE", "/api/v1/namespaces/" + ns + "/pods/" + name, json{{"gracePeriodSeconds", 0}}.dump());
}

std::string ApiServer::create_resource_claim(const std::string& ns, const std::string& name) const {
    // One request of a device class, as a ResourceClaimTemplate would make it: the real server
    // validates the spec (the class need not exist until the scheduler allocates the claim).
    json claim = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceClaim"},
        {"metadata", {{"name", name}, {"namespace", ns}}},
        {"spec",
         {{"devices", {{"requests", {{{"name", "rail"}, {"exactly", {{"deviceClassName", "dranet.net"}}}}}}}}}}};
    ensure_namespace(ns);
    auto r = request("POST", "/apis/resource.k8s.io/v1/namespaces/" + ns + "/resourceclaims", claim.dump());
    if (r.status != 201) throw std::runtime_error("create resourceclaim failed: " + r.text);
    return r.body["metadata"].value("uid", "");
}

int ApiServer::delete_resource_claim(const std::string& ns, const std::string& name) const {
    return request("DELETE", "/apis/resource.k8s.io/v1/namespaces/" + ns + "/resourceclaims/" + name).status;
}

std::string ApiServer::create_node(const std::string& name) const {
    json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}, {"spec", json::object()}};
    auto r = request("POST", "/api/v1/nodes", node.dump());
    if (r.status != 201) throw std::runtime_error("create node failed: " + r.body.dump());
    return r.body["metadata"].value("uid", "");
}

int ApiServer::delete_node(const std::string& name) const { return request("DELETE", "/api/v1/nodes/" + name).status; }

}  // namespace apiserver_test
