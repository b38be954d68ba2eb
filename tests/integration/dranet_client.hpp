#pragma once
// A client of rdmanet's DRANET profile provider that speaks DRANET's wire exactly: HTTP/1.1 over
// the unix socket as Go's net/http sends it (Host: localhost, Content-Length, JSON body), with the
// JSON encoding/json makes of pkg/cloudprovider/webhook's ProfileRequest (fields in declaration
// order, omitempty as tagged); the answer read with the project's own response parser. Also the
// provider as a real process (bin/rdmanetctl dranet-provider) in a temp directory.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/base/fd.hpp"
#include "rdmanet/cni/node/unix_http_client.hpp"
#include "support/cni_driver.hpp"

extern char** environ;

namespace dranet_test {

using nlohmann::json;

struct Reply {
    long status = 0;  // 0: the connection closed without an answer
    std::string body;
    json j() const { return json::parse(body, nullptr, false); }
};

// The product's unix-socket client pieces (the node agent's claim GC releases through them).
inline rdmanet::base::UniqueFd connect_unix(const std::string& path) {
    return rdmanet::cni::node::connect_unix_socket(path, std::chrono::seconds(20));
}

inline void send_raw(int fd, std::string_view data) { rdmanet::cni::node::send_all(fd, data); }

inline Reply read_reply(int fd) {
    auto r = rdmanet::cni::node::read_http_reply(fd);
    return Reply{r.status, std::move(r.body)};
}

// One request, as Go's http.Client writes it.
inline Reply http(const std::string& socket, const std::string& method, const std::string& path,
                  const std::string& body = "") {
    auto fd = connect_unix(socket);
    if (!fd) return {};
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nUser-Agent: Go-http-client/1.1\r\n";
    if (method == "POST")
        req += "Content-Length: " + std::to_string(body.size()) + "\r\nContent-Type: application/json\r\n";
    req += "Accept-Encoding: gzip\r\n\r\n" + body;
    send_raw(fd.get(), req);
    return read_reply(fd.get());
}

// A profile member: the admin's word that whereabouts' ip-reconciler does not run, without which
// the provider refuses claims in whereabouts' IPPools (its reconciler would release them).
inline const json kNoWhereaboutsReconciler = json::array({"whereaboutsReconciler", "absent"});

struct Device {
    std::string name, pci, mac;
};

// encoding/json of webhook.ProfileRequest{Device, ClaimUID, Config: &apis.NetworkConfig{...}}.
inline std::string profile_request(const Device& d, const std::string& claim, const std::string& profile,
                                   const std::vector<std::string>& addresses = {}) {
    json device = json::object();
    if (!d.mac.empty()) device["mac_address"] = d.mac;
    if (!d.pci.empty()) device["pci_address"] = d.pci;
    device["name"] = d.name;
    json iface = json::object();
    if (!addresses.empty()) iface["addresses"] = addresses;
    json config = json::object();
    if (!profile.empty()) config["profile"] = profile;
    config["interface"] = iface;
    // nlohmann sorts keys; Go writes declaration order. The server must not care: the bytes here
    // are written by hand in Go's order.
    return "{\"device\":" + device.dump() + ",\"claim_uid\":" + json(claim).dump() + ",\"config\":" + config.dump() +
           "}";
}

// bin/rdmanetctl dranet-provider in its own temp directory, stopped (SIGTERM) and removed at the end.
class ProviderProcess {
public:
    explicit ProviderProcess(const std::string& tag, unsigned threads = 4) {
        char tmpl[] = "/tmp/rdmanet-dranet-XXXXXX";
        if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
        dir_ = tmpl;
        (void)tag;
        std::filesystem::create_directories(profiles());
        std::filesystem::create_directories(dir_ + "/data");
        socket_ = dir_ + "/run/provider.sock";
        threads_ = threads;
    }
    ~ProviderProcess() {
        stop();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    ProviderProcess(const ProviderProcess&) = delete;
    ProviderProcess& operator=(const ProviderProcess&) = delete;

    std::string profiles() const { return dir_ + "/profiles"; }
    std::string data_dir() const { return dir_ + "/data"; }
    std::string state_dir() const { return dir_ + "/state"; }
    const std::string& socket() const { return socket_; }
    const std::string& dir() const { return dir_; }
    std::string log() const {
        std::ifstream in(dir_ + "/provider.log");
        return std::string(std::istreambuf_iterator<char>(in), {});
    }

    void write_profile(const std::string& name, const json& profile) const {
        std::ofstream(profiles() + "/" + name + ".json", std::ios::trunc) << profile.dump(1);
    }

    // Environment for the provider beyond the test's own (RDMANET_POLICY_FILE of a kube test).
    std::map<std::string, std::string> extra_env;
    // Flags after the ones every test passes (--kubeconfig F, --namespace NS).
    std::vector<std::string> extra_args;

    void start() {
        const std::string ctl = rdmanet::test::bin_dir() + "/rdmanetctl";
        std::vector<std::string> args{ctl,           "dranet-provider", "--socket",    socket_,
                                      "--profiles",  profiles(),        "--state-dir", state_dir(),
                                      "--node-name", "node-1",          "--threads",   std::to_string(threads_)};
        args.insert(args.end(), extra_args.begin(), extra_args.end());
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        const std::string log = dir_ + "/provider.log";
        posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        std::vector<std::string> env_text;
        for (char** e = environ; *e; ++e) {
            const std::string entry = *e;
            if (!extra_env.contains(entry.substr(0, entry.find('=')))) env_text.push_back(entry);
        }
        for (const auto& [k, v] : extra_env) env_text.push_back(k + "=" + v);
        std::vector<char*> envp;
        for (auto& e : env_text) envp.push_back(e.data());
        envp.push_back(nullptr);
        const int rc = posix_spawn(&pid_, ctl.c_str(), &fa, nullptr, argv.data(), envp.data());
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) throw std::runtime_error("cannot start " + ctl);
        for (int i = 0; i < 200; ++i) {
            if (http(socket_, "GET", "/health").status == 200) return;
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("the provider exited: " + this->log());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        throw std::runtime_error("the provider did not answer /health within 10 s: " + this->log());
    }

    // SIGTERM; the exit status (-1 when not running).
    int stop() {
        if (pid_ <= 0) return -1;
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    bool running() {
        if (pid_ <= 0) return false;
        int status = 0;
        return ::waitpid(pid_, &status, WNOHANG) == 0;
    }

private:
    std::string dir_, socket_;
    unsigned threads_ = 4;
    pid_t pid_ = -1;
};

}  // namespace dranet_test
