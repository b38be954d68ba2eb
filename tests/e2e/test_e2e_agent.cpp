// rdmanetctl agent as the DaemonSet runs it: a long-running process that repairs attachments on
// demand (SIGHUP) and on its interval, serves Prometheus metrics on 127.0.0.1 that match the
// operations the test performed, exits 0 promptly on SIGTERM, and with the Kubernetes API asks
// only for its own node's pods.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "e2e/e2e_helpers.hpp"
#include "fixture.hpp"
#include "support/process.hpp"
#include "support/prometheus_parse.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

// bin/rdmanetctl agent ... in the background, stdout/stderr to files in the workspace; killed
// (by its PID) if the test did not stop it.
class AgentProcess {
public:
    AgentProcess(const Workspace& ws, const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& extra_env = {})
        : out_(ws.path("agent.out")), err_(ws.path("agent.err")) {
        std::vector<std::string> argv{bin_dir() + "/rdmanetctl", "agent"};
        argv.insert(argv.end(), args.begin(), args.end());
        // Never the node's IPAM data dir (/var/lib/cni/rdmanet/ipam): its backlog is not this test's.
        if (std::find(args.begin(), args.end(), "--ipam-data-dir") == args.end())
            argv.insert(argv.end(), {"--ipam-data-dir", ws.ipam_dir()});
        auto env = current_environment();
        for (const auto& [k, v] : ws.env()) env[k] = v;
        for (const auto& [k, v] : extra_env) env[k] = v;
        std::vector<std::string> env_strings;
        for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
        pid_ = ::fork();
        if (pid_ == 0) {
            const int o = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            const int e = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            ::dup2(o, 1);
            ::dup2(e, 2);
            std::vector<char*> cargv, cenv;
            for (auto& a : argv) cargv.push_back(a.data());
            cargv.push_back(nullptr);
            for (auto& s : env_strings) cenv.push_back(s.data());
            cenv.push_back(nullptr);
            ::execve(cargv[0], cargv.data(), cenv.data());
            ::_exit(127);
        }
    }
    ~AgentProcess() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    AgentProcess(const AgentProcess&) = delete;
    AgentProcess& operator=(const AgentProcess&) = delete;

    std::string out() const { return slurp(out_); }
    std::string err() const { return slurp(err_); }
    void signal(int sig) const { ::kill(pid_, sig); }

    // The port from "metrics on 127.0.0.1:PORT", waiting up to 10 s for the agent to print it.
    int metrics_port() const {
        const std::regex re("metrics on 127\\.0\\.0\\.1:([0-9]+)");
        std::smatch m;
        int port = 0;
        eventually(
            [&] {
                const std::string text = out();
                if (std::regex_search(text, m, re)) port = std::stoi(m[1]);
                return port != 0;
            },
            std::chrono::seconds(10));
        return port;
    }

    // Waits up to `limit` for the exit; the exit status, or -1 when still running.
    int wait_exit(std::chrono::milliseconds limit) {
        const auto until = std::chrono::steady_clock::now() + limit;
        for (;;) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            if (std::chrono::steady_clock::now() >= until) return -1;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }

private:
    static std::string slurp(const std::string& path) {
        std::ifstream in(path);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }
    std::string out_, err_;
    pid_t pid_ = -1;
};

PromExposition scrape(int port) {
    const auto r = http_get_local(port, "/metrics");
    REQUIRE(r.status == 200);
    CHECK(r.content_type == "text/plain; version=0.0.4; charset=utf-8");
    return parse_prometheus_text(r.body);
}

json embedded_ipam(const Workspace& ws, const std::string& range) {
    return {{"type", "rdmanet-ipam"}, {"range", range}, {"data_dir", ws.path("db")}};
}

}  // namespace

TEST_CASE("agent: metrics after known operations, a repair on SIGHUP, exit 0 on SIGTERM", "[e2e][agent][metrics]") {
    Workspace ws;
    ScopedVeth uplink{nullptr, nullptr, "am"};
    ScopedNetns pod_a{"pa"}, pod_b{"pb"};
    set_link_up(nullptr, uplink.name_a());
    const auto conf = plugin_stdin("e2e-agmet", "1.0.0",
                                   {{"type", "rdmanet"},
                                    {"mode", "macvlan"},
                                    {"master", uplink.name_a()},
                                    {"ipam", embedded_ipam(ws, "10.250.48.0/29")}});
    auto bad = conf;
    bad["master"] = "no-such-dev0";

    // Known operations: 2 ADDs, 1 failed ADD (code 101, master missing), 1 DEL.
    const std::string id_a = container_id("ma"), id_b = container_id("mb");
    REQUIRE(direct(ws, "ADD", pod_a.path(), id_a, "net1", conf).ok());
    REQUIRE(direct(ws, "ADD", pod_b.path(), id_b, "net1", conf).ok());
    const auto failed = direct(ws, "ADD", pod_b.path(), container_id("mc"), "net2", bad);
    REQUIRE(failed.code() == 101);
    REQUIRE(direct(ws, "DEL", pod_a.path(), id_a, "net1", conf).ok());

    AgentProcess agent(ws,
                       {"--interval", "3600", "--metrics-address", "127.0.0.1:0", "--ipam-data-dir", ws.path("db")});
    const int port = agent.metrics_port();
    INFO(agent.out() << agent.err());
    REQUIRE(port > 0);

    const auto m = scrape(port);
    const std::map<std::string, std::string> pool{{"network", ""}, {"range", "10.250.48.0/29"}};
    CHECK(m.value("rdmanet_pool_size", pool) == 6.0);  // /29: 8 addresses minus network and broadcast
    CHECK(m.value("rdmanet_pool_used", pool) == 1.0);
    CHECK(m.value("rdmanet_pool_free", pool) == 5.0);
    CHECK(m.value("rdmanet_attachments", {{"mode", "macvlan"}}) == 1.0);
    CHECK(m.value("rdmanet_plugin_calls_total", {{"verb", "ADD"}, {"code", "0"}}) == 2.0);
    CHECK(m.value("rdmanet_plugin_calls_total", {{"verb", "ADD"}, {"code", "101"}}) == 1.0);
    CHECK(m.value("rdmanet_plugin_calls_total", {{"verb", "DEL"}, {"code", "0"}}) == 1.0);
    CHECK(m.value("rdmanet_plugin_duration_seconds_count", {{"verb", "ADD"}}) == 3.0);
    CHECK(m.value("rdmanet_plugin_duration_seconds_bucket", {{"verb", "ADD"}, {"le", "+Inf"}}) == 3.0);
    CHECK(m.value("rdmanet_plugin_duration_seconds_sum", {{"verb", "ADD"}}) > 0.0);
    CHECK(m.types.at("rdmanet_plugin_duration_seconds") == "histogram");
    CHECK(m.value("rdmanet_agent_passes_total") == 1.0);

    // Pod b's netns dies without DEL; a SIGHUP runs a pass now.
    run_command_checked({"ip", "netns", "del", pod_b.name()});
    agent.signal(SIGHUP);
    CHECK(eventually([&] { return scrape(port).value("rdmanet_agent_passes_total") == 2.0; }));
    const auto after = scrape(port);
    CHECK(after.value("rdmanet_agent_repairs_total", {{"mode", "macvlan"}, {"reason", "netns_gone"}}) == 1.0);
    CHECK(after.value("rdmanet_pool_used", pool) == 0.0);
    CHECK(after.value("rdmanet_attachments", {{"mode", "macvlan"}}) == std::nullopt);
    CHECK(ws.state_files().empty());
    CHECK(agent.out().find("repaired e2e-agmet " + id_b + " net1 (macvlan)") != std::string::npos);

    // Other paths are not metrics.
    CHECK(http_get_local(port, "/").status == 404);

    agent.signal(SIGTERM);
    CHECK(agent.wait_exit(std::chrono::seconds(2)) == 0);
}

TEST_CASE("agent: the metrics endpoint is off unless asked for", "[e2e][agent][metrics]") {
    Workspace ws;
    const auto r =
        run_process({bin_dir() + "/rdmanetctl", "agent", "--passes", "1", "--ipam-data-dir", ws.ipam_dir()}, ws.env());
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("metrics on") == std::string::npos);
}

TEST_CASE("agent: per pass one field-selected pod list, whatever the pods of other nodes", "[e2e][agent][kube]") {
    apiserver_test::TestApiServer server;
    const std::string kubeconfig = server.write_kubeconfig("agent");
    Workspace ws;
    ScopedVeth uplink{nullptr, nullptr, "ak"};
    ScopedNetns pod{"pk"};
    set_link_up(nullptr, uplink.name_a());
    server.create_pod_on("default", "mine", "node-a");
    server.create_pod_on("default", "other-0", "node-b");

    // An attachment of pod "mine" (CNI_ARGS as the kubelet passes them), sandbox alive.
    const auto conf = plugin_stdin("e2e-agkube", "1.0.0",
                                   {{"type", "rdmanet"},
                                    {"mode", "macvlan"},
                                    {"master", uplink.name_a()},
                                    {"ipam", embedded_ipam(ws, "10.250.49.0/24")}});
    PluginRequest add{"ADD",
                      container_id("k"),
                      pod.path(),
                      "net1",
                      "K8S_POD_NAMESPACE=default;K8S_POD_NAME=mine",
                      default_cni_path(),
                      conf.dump()};
    REQUIRE(invoke_plugin(rdmanet_path(), add, ws.env()).ok());

    const auto requests_of_one_pass = [&] {
        const auto before = server.stats().value("requests", 0);
        const auto r = run_process({bin_dir() + "/rdmanetctl", "agent", "--passes", "1", "--kubeconfig", kubeconfig,
                                    "--node-name", "node-a", "--pod-grace", "0", "--ipam-data-dir", ws.ipam_dir()},
                                   ws.env());
        INFO(r.out << r.err);
        CHECK(r.exit_code == 0);
        return server.stats().value("requests", 0) - before;  // the /_test/ endpoints are not counted
    };
    const auto few = requests_of_one_pass();
    for (int i = 1; i <= 100; ++i) server.create_pod_on("default", "other-" + std::to_string(i), "node-b");
    const auto many = requests_of_one_pass();
    CHECK(few == 1);
    CHECK(many == few);
    CHECK(ws.state_files().size() == 1);  // its pod exists: left alone

    // Deleted from the API while its sandbox lingers: undone (grace 0 here).
    server.delete_pod("default", "mine");
    const auto r = run_process({bin_dir() + "/rdmanetctl", "agent", "--passes", "1", "--kubeconfig", kubeconfig,
                                "--node-name", "node-a", "--pod-grace", "0", "--ipam-data-dir", ws.ipam_dir()},
                               ws.env());
    INFO(r.out << r.err);
    CHECK(r.out.find("pod_gone") != std::string::npos);
    CHECK(ws.state_files().empty());
    CHECK(only_loopback(pod));
}
