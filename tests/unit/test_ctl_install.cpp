// rdmanetctl install against a temporary host tree: atomic binary copies, the IPAM kubeconfig from
// the service account (0600, rewritten on token rotation), the node policy file, modprobe.d.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "ipam_test_util.hpp"
#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/base/atomic_file.hpp"
#include "rdmanet/cni/cli/install.hpp"
#include "rdmanet/cni/translate/render.hpp"
#include "rdmanet/cni/config/policy.hpp"

using namespace rdmanet::cni::cli;
using namespace rdmanet::cni::translate;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void write(const std::string& path, const std::string& content) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << content;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

unsigned mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

ino_t inode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_ino;
}

const char* kCa = "-----BEGIN CERTIFICATE-----\nMIIBdummy\n-----END CERTIFICATE-----\n";

struct HostTree {
    ipam_test::TempDir dir;
    InstallOptions options;

    HostTree() {
        write(dir.sub("image/rdmanet"), "plugin v1");
        write(dir.sub("image/rdmanet-ipam"), "ipam v1");
        write(dir.sub("sa/token"), "eyJhbGciOi.token-one.sig\n");
        write(dir.sub("sa/ca.crt"), kCa);
        options.source_dir = dir.sub("image");
        options.cni_bin_dir = dir.sub("host/opt/cni/bin");
        options.cni_conf_dir = dir.sub("host/etc/cni/net.d");
        options.service_account_dir = dir.sub("sa");
        options.modprobe_dir = dir.sub("host/etc/modprobe.d");
        options.getenv = [](const char* name) -> std::optional<std::string> {
            if (std::string(name) == "KUBERNETES_SERVICE_HOST") return "10.96.0.1";
            if (std::string(name) == "KUBERNETES_SERVICE_PORT") return "443";
            return std::nullopt;
        };
    }
    std::string kubeconfig() const { return options.cni_conf_dir + "/rdmanet.d/rdmanet.kubeconfig"; }
};

}  // namespace

TEST_CASE("base: write_file_atomically replaces by rename and leaves no temporary file", "[ctl][install]") {
    ipam_test::TempDir dir;
    const auto path = dir.sub("file");
    write(path, "old");
    const auto old_inode = inode_of(path);
    rdmanet::base::write_file_atomically(path, "new content", 0640);
    CHECK(slurp(path) == "new content");
    CHECK(mode_of(path) == 0640);
    // A new inode: a process that had the old file open (or is exec'ing it) keeps the old bytes.
    CHECK(inode_of(path) != old_inode);
    std::size_t entries = 0;
    for (const auto& e : fs::directory_iterator(dir.path())) {
        ++entries;
        CHECK(e.path().filename() == "file");
    }
    CHECK(entries == 1);
    CHECK_THROWS_WITH(rdmanet::base::write_file_atomically(dir.sub("missing/file"), "x", 0600),
                      Catch::Contains("cannot create a temporary file in"));
}

TEST_CASE("install: binaries are copied atomically, 0755, and only when they changed", "[ctl][install]") {
    HostTree t;
    std::ostringstream out, err;
    REQUIRE(install(t.options, out, err) == 0);
    CHECK(err.str().empty());
    const auto plugin = t.options.cni_bin_dir + "/rdmanet";
    CHECK(slurp(plugin) == "plugin v1");
    CHECK(slurp(t.options.cni_bin_dir + "/rdmanet-ipam") == "ipam v1");
    CHECK(mode_of(plugin) == 0755);
    CHECK_THAT(out.str(), Catch::Contains("installed " + plugin));

    // Same bytes: nothing replaced (the inode stays).
    const auto inode = inode_of(plugin);
    auto report = install_once(t.options, out);
    CHECK(report.binaries_replaced.empty());
    CHECK(inode_of(plugin) == inode);

    // A new image: replaced by rename, so the old inode is never written.
    write(t.dir.sub("image/rdmanet"), "plugin v2");
    report = install_once(t.options, out);
    CHECK(report.binaries_replaced == std::vector<std::string>{"rdmanet"});
    CHECK(slurp(plugin) == "plugin v2");
    CHECK(inode_of(plugin) != inode);
}

TEST_CASE("install: the IPAM kubeconfig comes from the service account, 0600", "[ctl][install]") {
    HostTree t;
    t.options.ipam_namespace = "ipam-ns";
    std::ostringstream out, err;
    REQUIRE(install(t.options, out, err) == 0);
    const auto text = slurp(t.kubeconfig());
    CHECK(mode_of(t.kubeconfig()) == 0600);
    CHECK(mode_of(t.options.cni_conf_dir + "/rdmanet.d") == 0700);
    // The output names the file but never carries the token.
    CHECK_THAT(out.str(), Catch::Contains("wrote " + t.kubeconfig()));
    CHECK_THAT(out.str(), !Catch::Contains("token-one"));

    const auto kc = yaml_to_json(text);
    CHECK(kc["current-context"] == "rdmanet");
    CHECK(kc["clusters"][0]["cluster"]["server"] == "https://10.96.0.1:443");
    CHECK(kc["users"][0]["user"]["token"] == "eyJhbGciOi.token-one.sig");
    CHECK(kc["contexts"][0]["context"]["namespace"] == "ipam-ns");
    // certificate-authority-data is the CA, base64: "-----BEGIN CERTIFICATE-----" -> "LS0tLS1CRUdJTi..."
    CHECK_THAT(kc["clusters"][0]["cluster"]["certificate-authority-data"].get<std::string>(),
               Catch::StartsWith("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"));
}

TEST_CASE("install: the kubeconfig is rewritten when the token rotates (--watch)", "[ctl][install]") {
    HostTree t;
    t.options.watch = true;
    t.options.max_rounds = 3;
    t.options.interval = std::chrono::seconds(42);
    std::vector<std::chrono::seconds> sleeps;
    int rotation = 0;
    t.options.wait = [&](std::chrono::seconds s) {
        sleeps.push_back(s);
        // The kubelet refreshes the projected token in place between two rounds.
        if (++rotation == 2) write(t.dir.sub("sa/token"), "eyJhbGciOi.token-two.sig\n");
        return false;
    };
    std::ostringstream out, err;
    REQUIRE(install(t.options, out, err) == 0);
    CHECK(sleeps == std::vector<std::chrono::seconds>{std::chrono::seconds(42), std::chrono::seconds(42)});
    CHECK(yaml_to_json(slurp(t.kubeconfig()))["users"][0]["user"]["token"] == "eyJhbGciOi.token-two.sig");
    // Written in round 1 and round 3 only (round 2 saw the same token).
    const auto s = out.str();
    std::size_t writes = 0;
    const std::string wrote_kubeconfig = "wrote " + t.kubeconfig();
    for (auto pos = s.find(wrote_kubeconfig); pos != std::string::npos; pos = s.find(wrote_kubeconfig, pos + 1))
        ++writes;
    CHECK(writes == 2);
}

TEST_CASE("install: a watch round that fails keeps the loop going, a single run fails", "[ctl][install]") {
    HostTree t;
    fs::remove(t.dir.sub("sa/token"));
    std::ostringstream out, err;
    CHECK(install(t.options, out, err) == 1);
    CHECK_THAT(err.str(), Catch::Contains("cannot read the service account token"));
    CHECK_FALSE(fs::exists(t.kubeconfig()));

    t.options.watch = true;
    t.options.max_rounds = 2;
    t.options.wait = [&](std::chrono::seconds) {
        write(t.dir.sub("sa/token"), "eyJ.late.sig");
        return false;
    };
    std::ostringstream out2, err2;
    CHECK(install(t.options, out2, err2) == 0);
    CHECK(yaml_to_json(slurp(t.kubeconfig()))["users"][0]["user"]["token"] == "eyJ.late.sig");
}

TEST_CASE("install: API server from the environment or the flag, bad values refused", "[ctl][install]") {
    HostTree t;
    t.options.getenv = [](const char* name) -> std::optional<std::string> {
        if (std::string(name) == "KUBERNETES_SERVICE_HOST") return "fd00::1";
        return std::nullopt;
    };
    std::ostringstream out, err;
    REQUIRE(install(t.options, out, err) == 0);
    CHECK(yaml_to_json(slurp(t.kubeconfig()))["clusters"][0]["cluster"]["server"] == "https://[fd00::1]:443");

    t.options.getenv = [](const char*) -> std::optional<std::string> { return std::nullopt; };
    std::ostringstream err2;
    CHECK(install(t.options, out, err2) == 1);
    CHECK_THAT(err2.str(), Catch::Contains("--api-server"));

    t.options.api_server = "https://api.example:6443";
    write(t.dir.sub("sa/token"), "has space\n");
    std::ostringstream err3;
    CHECK(install(t.options, out, err3) == 1);
    CHECK_THAT(err3.str(), Catch::Contains("token contains a character"));
}

TEST_CASE("install: the node policy file is written with defaults only when absent", "[ctl][install]") {
    HostTree t;
    std::ostringstream out, err;
    REQUIRE(install(t.options, out, err) == 0);
    const auto policy_file = t.options.cni_conf_dir + "/rdmanet.d/policy.json";
    const auto text = slurp(policy_file);
    auto policy = rdmanet::cni::parse_node_policy(text, policy_file, rdmanet::cni::mode_names());
    CHECK(policy.log_dir == "/var/log/rdmanet");
    CHECK_THAT(out.str(), Catch::Contains("wrote " + policy_file + " (the node policy's defaults"));

    write(policy_file, R"({"version": 1, "modes": ["macvlan"]})");
    out.str("");
    REQUIRE(install(t.options, out, err) == 0);
    CHECK(out.str().find(policy_file) == std::string::npos);  // the admin's file: not touched, not reported
    CHECK(slurp(policy_file) == R"({"version": 1, "modes": ["macvlan"]})");
}

TEST_CASE("install: --rdma-netns-mode persists the mode in modprobe.d", "[ctl][install]") {
    HostTree t;
    std::ostringstream out, err;
    REQUIRE(install(t.options, out, err) == 0);
    CHECK_FALSE(fs::exists(t.options.modprobe_dir + "/rdmanet-ib_core.conf"));

    t.options.rdma_netns_mode = "exclusive";
    REQUIRE(install(t.options, out, err) == 0);
    CHECK_THAT(slurp(t.options.modprobe_dir + "/rdmanet-ib_core.conf"),
               Catch::Contains("\noptions ib_core netns_mode=0\n"));
    t.options.rdma_netns_mode = "shared";
    REQUIRE(install(t.options, out, err) == 0);
    CHECK_THAT(slurp(t.options.modprobe_dir + "/rdmanet-ib_core.conf"),
               Catch::Contains("\noptions ib_core netns_mode=1\n"));
    t.options.rdma_netns_mode = "bogus";
    CHECK(install(t.options, out, err) == 1);
}

TEST_CASE("install: a missing binary in the image fails the install", "[ctl][install]") {
    HostTree t;
    fs::remove(t.dir.sub("image/rdmanet-ipam"));
    std::ostringstream out, err;
    CHECK(install(t.options, out, err) == 1);
    CHECK_THAT(err.str(), Catch::Contains("cannot read " + t.dir.sub("image/rdmanet-ipam")));
}

TEST_CASE("install: the node's name from NODE_NAME goes to rdmanet.d/nodename for node-slice IPAM", "[ctl][install]") {
    HostTree t;
    std::ostringstream out, err;
    REQUIRE(install(t.options, out, err) == 0);
    const auto file = t.options.cni_conf_dir + "/rdmanet.d/nodename";
    CHECK_FALSE(std::filesystem::exists(file));  // no NODE_NAME: nothing written
    t.options.getenv = [](const char* name) -> std::optional<std::string> {
        if (std::string(name) == "NODE_NAME") return "gpu-node-7";
        if (std::string(name) == "KUBERNETES_SERVICE_HOST") return "10.96.0.1";
        if (std::string(name) == "KUBERNETES_SERVICE_PORT") return "443";
        return std::nullopt;
    };
    out.str("");
    REQUIRE(install(t.options, out, err) == 0);
    CHECK(slurp(file) == "gpu-node-7\n");
    CHECK_THAT(out.str(), Catch::Contains("wrote " + file));
    out.str("");
    REQUIRE(install(t.options, out, err) == 0);
    CHECK(out.str().find(file) == std::string::npos);  // unchanged: not rewritten
}
