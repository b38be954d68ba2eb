// The DaemonSet's long-running commands as PID 1 would run them: SIGTERM ends them with exit 0
// at once (before, they ignored it and the kubelet killed them after the grace period).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../unit/ipam_test_util.hpp"
#include "support/build_paths.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Starts argv with stdout/stderr to `log`; returns the pid.
pid_t start(const std::vector<std::string>& argv, const std::string& log) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::FILE* f = std::fopen(log.c_str(), "w");
        if (f) {
            ::dup2(::fileno(f), 1);
            ::dup2(::fileno(f), 2);
        }
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    return pid;
}

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

// Waits until `log` contains `needle` (the first round is done), then SIGTERMs and times the exit.
void expect_prompt_exit(pid_t pid, const std::string& log, const std::string& needle) {
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (slurp(log).find(needle) == std::string::npos && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(20ms);
    INFO(slurp(log));
    REQUIRE(slurp(log).find(needle) != std::string::npos);
    const auto sent = std::chrono::steady_clock::now();
    ::kill(pid, SIGTERM);
    int status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() - sent < 10s)
        std::this_thread::sleep_for(5ms);
    if (done == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        FAIL("still running 10 s after SIGTERM");
    }
    const auto took = std::chrono::steady_clock::now() - sent;
    CHECK(took < 2s);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK_THAT(slurp(log), Catch::Contains("stopping (SIGTERM)"));
}

}  // namespace

TEST_CASE("rdmanetctl install --watch exits 0 at once on SIGTERM", "[ctl][signal][integration]") {
    ipam_test::TempDir dir;
    const std::string src = dir.path() + "/src", bin = dir.path() + "/bin", conf = dir.path() + "/conf";
    fs::create_directories(src);
    for (const char* b : {"rdmanet", "rdmanet-ipam"}) fs::copy_file(rdmanet::test::bin_dir() + "/" + b, src + "/" + b);
    const std::string log = dir.path() + "/log";
    const pid_t pid =
        start({rdmanet::test::bin_dir() + "/rdmanetctl", "install", "--watch", "--interval=60", "--source-dir=" + src,
               "--cni-bin-dir=" + bin, "--cni-conf-dir=" + conf, "--service-account-dir", ""},
              log);
    expect_prompt_exit(pid, log, "installed " + bin + "/rdmanet-ipam");
}

TEST_CASE("rdmanetctl reconcile --interval exits 0 at once on SIGTERM, even in a round retrying",
          "[ctl][signal][integration]") {
    ipam_test::TempDir dir;
    // An API server that is not there: the round retries until its deadline; SIGTERM does not wait for it.
    const std::string kubeconfig = dir.path() + "/kubeconfig";
    std::ofstream(kubeconfig)
        << "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n"
           "    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n"
           "  user: {}\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n";
    const std::string log = dir.path() + "/log";
    const pid_t pid = start(
        {rdmanet::test::bin_dir() + "/rdmanetctl", "reconcile", "--kubeconfig", kubeconfig, "--interval=300"}, log);
    std::this_thread::sleep_for(300ms);  // inside the first round
    expect_prompt_exit(pid, log, "");
}
