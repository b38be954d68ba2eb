// rdmanetctl doctor against fake node trees: a healthy node passes, and each problem class it
// knows is reported (with the thing named and the fix) and turns the exit status non-zero.
#include <catch2/catch.hpp>

#include "rdmanet/cni/doctor/tuning_allowlist.hpp"

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "ipam_test_util.hpp"
#include "rdmanet/cni/doctor/doctor.hpp"
#include "rdmanet/cni/cli/install.hpp"
#include "support/fake_vf_control.hpp"

using namespace rdmanet::cni::cli;
using namespace rdmanet::cni::doctor;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void write(const fs::path& path, const std::string& content, unsigned mode = 0644) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
    ::chmod(path.c_str(), mode);
}

std::string b64url(const std::string& in) {
    static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    unsigned buffer = 0;
    int bits = 0;
    for (unsigned char c : in) {
        buffer = buffer << 8 | c;
        bits += 8;
        while (bits >= 6) out += a[buffer >> (bits -= 6) & 63];
    }
    if (bits) out += a[buffer << (6 - bits) & 63];
    return out;
}

std::string jwt_expiring_in(std::chrono::seconds delta) {
    const auto exp =
        std::chrono::duration_cast<std::chrono::seconds>((std::chrono::system_clock::now() + delta).time_since_epoch())
            .count();
    return b64url(R"({"alg":"RS256"})") + "." +
           b64url(R"({"sub":"system:serviceaccount:x:y","exp":)" + std::to_string(exp) + "}") + ".c2ln";
}

// A node where everything is right; tests break one thing each.
struct FakeNode {
    ipam_test::TempDir dir;
    DoctorOptions options;
    fs::path root;

    FakeNode() : root(dir.path()) {
        options.root = dir.path();
        port("mlx5_0", "1", "4: ACTIVE", "5: LinkUp", "InfiniBand");
        port("mlx5_1", "1", "4: ACTIVE", "5: LinkUp", "Ethernet");
        write(root / "sys/module/ib_core/parameters/netns_mode", "N\n");
        write(root / "etc/modprobe.d/rdma.conf", "# rdma\noptions ib_core netns_mode=0\n");
        write(root / "sys/class/net/ens1f0/device/sriov_totalvfs", "16\n");
        write(root / "sys/class/net/ens1f0/device/sriov_numvfs", "8\n");
        write(root / "opt/cni/bin/rdmanet", "binary", 0755);
        write(root / "opt/cni/bin/rdmanet-ipam", "binary", 0755);
        write(root / "etc/cni/net.d/10-rdma.conflist", R"({"cniVersion":"1.0.0","name":"n","plugins":[
            {"type":"rdmanet","mode":"macvlan","master":"ens1f0","ipam":{"type":"rdmanet-ipam","range":"10.0.0.0/24"}}]})");
        write(root / "etc/cni/net.d/rdmanet.d/policy.json", R"({"version":1,"modes":["macvlan","hostdev"]})");
        kubeconfig(jwt_expiring_in(std::chrono::hours(1)));
        write(root / "etc/containerd/config.toml",
              "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
              "  base_runtime_spec = \"/etc/containerd/cri-base.json\"\n");
        base_spec(R"([{"type":"RLIMIT_NOFILE","hard":1048576,"soft":1048576},
                      {"type":"RLIMIT_MEMLOCK","hard":18446744073709551615,"soft":18446744073709551615}])");
    }
    void port(const std::string& dev, const std::string& n, const std::string& state, const std::string& phys,
              const std::string& layer) {
        const auto p = root / "sys/class/infiniband" / dev / "ports" / n;
        write(p / "state", state + "\n");
        write(p / "phys_state", phys + "\n");
        write(p / "link_layer", layer + "\n");
    }
    void kubeconfig(const std::string& token, unsigned mode = 0600) {
        write(
            root / "etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig",
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://10.96.0.1:443\n"
            "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\n"
            "users:\n- name: u\n  user:\n    token: \"" +
                token +
                "\"\n"
                "contexts:\n- name: x\n  context: {cluster: c, user: u, namespace: kube-system}\ncurrent-context: x\n",
            mode);
    }
    void base_spec(const std::string& rlimits) {
        write(root / "etc/containerd/cri-base.json", R"({"ociVersion":"1.1.0","process":{"rlimits":)" + rlimits + "}}");
    }
    std::vector<Finding> run() const { return doctor_checks(options); }
};

std::vector<Finding> with_status(const std::vector<Finding>& all, Status status, const std::string& check = "") {
    std::vector<Finding> out;
    for (const auto& f : all)
        if (f.status == status && (check.empty() || f.check == check)) out.push_back(f);
    return out;
}

std::string describe(const std::vector<Finding>& fs) {
    std::string s;
    for (const auto& f : fs) s += f.check + " | " + f.subject + " | " + f.message + "\n";
    return s;
}

// The one failure of `check` (there must be exactly one) on this node.
Finding only_failure(const FakeNode& node, const std::string& check) {
    const auto all = node.run();
    const auto fails = with_status(all, Status::fail);
    INFO(describe(all));
    REQUIRE(fails.size() == 1);
    CHECK(fails[0].check == check);
    return fails[0];
}

}  // namespace

TEST_CASE("doctor: a healthy node passes, exit 0", "[ctl][doctor]") {
    FakeNode node;
    node.options.expect_vfs = {{"ens1f0", 8}};
    node.options.expect_netns_mode = "exclusive";
    const auto all = node.run();
    INFO(describe(all));
    CHECK(with_status(all, Status::fail).empty());
    CHECK(with_status(all, Status::warn).empty());
    for (const char* check : {"node.sysfs", "rdma.ports", "rdma.netns", "sriov.vfs", "cni.binary", "cni.config",
                              "node.policy", "ipam.kubeconfig", "runtime.memlock"})
        CHECK_FALSE(with_status(all, Status::ok, check).empty());
    std::ostringstream out, err;
    CHECK(run_doctor(node.options, out, err) == 0);
    CHECK_THAT(out.str(), Catch::Contains("no problems, 0 warning(s)"));
    CHECK(err.str().empty());
}

TEST_CASE("doctor: Down ports are named, INIT points at the subnet manager", "[ctl][doctor]") {
    FakeNode node;
    node.port("mlx5_1", "1", "1: DOWN", "3: Disabled", "Ethernet");
    auto f = only_failure(node, "rdma.ports");
    CHECK(f.subject == "mlx5_1 port 1");
    CHECK_THAT(f.message, Catch::Contains("1: DOWN") && Catch::Contains("3: Disabled"));

    node.port("mlx5_1", "1", "4: ACTIVE", "5: LinkUp", "Ethernet");
    node.port("mlx5_0", "1", "2: INIT", "5: LinkUp", "InfiniBand");
    f = only_failure(node, "rdma.ports");
    CHECK(f.subject == "mlx5_0 port 1");
    CHECK_THAT(f.message, Catch::Contains("subnet manager"));
}

TEST_CASE("doctor: a root without the node's sysfs fails, naming where to mount it", "[ctl][doctor]") {
    FakeNode node;
    const auto seen = with_status(node.run(), Status::ok, "node.sysfs");
    REQUIRE(seen.size() == 1);
    CHECK_THAT(seen[0].message, Catch::Contains("1 network interface(s): ens1f0"));
    fs::remove_all(node.root / "sys/class/net");
    const auto f = only_failure(node, "node.sysfs");
    CHECK_THAT(f.message, Catch::Contains((node.root / "sys").string()) && Catch::Contains("read-only"));
}

TEST_CASE("doctor: no RDMA devices is a warning", "[ctl][doctor]") {
    FakeNode node;
    fs::remove_all(node.root / "sys/class/infiniband");
    const auto all = node.run();
    CHECK(with_status(all, Status::warn, "rdma.ports").size() == 1);
    CHECK(with_status(all, Status::fail).empty());
}

TEST_CASE("doctor: a netns mode that does not persist across reboots fails", "[ctl][doctor]") {
    FakeNode node;
    fs::remove(node.root / "etc/modprobe.d/rdma.conf");
    auto f = only_failure(node, "rdma.netns");
    CHECK_THAT(f.message, Catch::Contains("current mode exclusive") && Catch::Contains("at boot shared") &&
                              Catch::Contains("netns_mode=0"));

    // The kernel command line counts as persisted.
    write(node.root / "proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ib_core.netns_mode=0 quiet\n");
    CHECK(with_status(node.run(), Status::fail).empty());

    // modprobe.d: the last file (lexical order) wins.
    fs::remove(node.root / "proc/cmdline");
    write(node.root / "etc/modprobe.d/10-a.conf", "options ib_core netns_mode=0\n");
    write(node.root / "etc/modprobe.d/20-b.conf", "options ib_core netns_mode=1\n");
    f = only_failure(node, "rdma.netns");
    CHECK_THAT(f.message, Catch::Contains("20-b.conf"));
}

TEST_CASE("doctor: a node in the wrong netns mode fails when a mode is expected", "[ctl][doctor]") {
    FakeNode node;
    write(node.root / "sys/module/ib_core/parameters/netns_mode", "Y\n");
    fs::remove(node.root / "etc/modprobe.d/rdma.conf");
    const auto shared = node.run();
    CHECK(with_status(shared, Status::fail).empty());  // shared, persisted by default
    // Which modes the exclusive mode would isolate: the registry's RDMA property of each mode.
    const auto ok = with_status(shared, Status::ok, "rdma.netns");
    REQUIRE(ok.size() == 1);
    CHECK_THAT(ok[0].message, Catch::Contains("exclusive mode gives hostdev, sriov attachments their own") &&
                                  Catch::Contains("macvlan, ipoib share their master's"));
    node.options.expect_netns_mode = "exclusive";
    auto f = only_failure(node, "rdma.netns");
    CHECK_THAT(f.message, Catch::Contains("should run exclusive") && Catch::Contains("--rdma-netns-mode exclusive"));
}

TEST_CASE("doctor: VFs configured vs requested", "[ctl][doctor]") {
    FakeNode node;
    node.options.expect_vfs = {{"ens1f0", 4}};
    auto f = only_failure(node, "sriov.vfs");
    CHECK(f.subject == "ens1f0");
    CHECK_THAT(f.message, Catch::Contains("8 of 16 VFs configured, 4 requested") &&
                              Catch::Contains("echo 4 > /sys/class/net/ens1f0/device/sriov_numvfs"));
    node.options.expect_vfs = {{"ens1f0", 32}};
    CHECK_THAT(only_failure(node, "sriov.vfs").message, Catch::Contains("more than the device supports"));
    node.options.expect_vfs = {{"ens9", 2}};
    f = only_failure(node, "sriov.vfs");
    CHECK(f.subject == "ens9");
    CHECK_THAT(f.message, Catch::Contains("not an SR-IOV capable netdev"));
}

TEST_CASE("doctor: each configured VF with its PCI address and PF-side settings", "[ctl][doctor][sriov]") {
    FakeNode node;
    rdmanet::test::FakeVfControl vfs;
    vfs.add_pf("ens1f0", 8);
    vfs.vf("ens1f0", 1).mac = "0a:58:0a:01:00:05";
    vfs.vf("ens1f0", 1).vlan = 100;
    vfs.vf("ens1f0", 1).qos = 3;
    vfs.vf("ens1f0", 1).trust = true;
    vfs.vf("ens1f0", 1).max_tx_rate = 1000;
    fs::create_directory_symlink("../../../devices/pci0000:00/0000:01:10.2",
                                 node.root / "sys/class/net/ens1f0/device/virtfn1");
    node.options.vf_control = &vfs;

    const auto all = node.run();
    INFO(describe(all));
    const auto per_vf = with_status(all, Status::ok, "sriov.vf");
    REQUIRE(per_vf.size() == 8);
    CHECK(per_vf[0].subject == "ens1f0 vf 0");
    CHECK(per_vf[0].message == "mac 00:00:00:00:00:00, vlan 0, spoofchk on, trust off, link_state auto");
    CHECK(per_vf[1].subject == "ens1f0 vf 1 (0000:01:10.2)");
    CHECK(per_vf[1].message ==
          "mac 0a:58:0a:01:00:05, vlan 100 qos 3, spoofchk on, trust on, link_state auto, max_tx_rate 1000 Mbps");

    // A PF the VF control does not know (the driver went away): a warning, the counts still shown.
    rdmanet::test::FakeVfControl empty;
    node.options.vf_control = &empty;
    const auto again = node.run();
    CHECK_FALSE(with_status(again, Status::ok, "sriov.vfs").empty());
    const auto warns = with_status(again, Status::warn, "sriov.vf");
    REQUIRE(warns.size() == 1);
    CHECK_THAT(warns[0].message, Catch::Contains("cannot read the VFs' settings"));
}

TEST_CASE("doctor: the CNI binary missing, not executable or writable by others", "[ctl][doctor]") {
    FakeNode node;
    fs::remove(node.root / "opt/cni/bin/rdmanet");
    auto f = only_failure(node, "cni.binary");
    CHECK_THAT(f.subject, Catch::EndsWith("opt/cni/bin/rdmanet"));
    CHECK_THAT(f.message, Catch::Contains("missing"));
    write(node.root / "opt/cni/bin/rdmanet", "x", 0644);
    CHECK_THAT(only_failure(node, "cni.binary").message, Catch::Contains("not an executable"));
    write(node.root / "opt/cni/bin/rdmanet", "x", 0777);
    CHECK_THAT(only_failure(node, "cni.binary").message, Catch::Contains("writable by group or others"));
    // rdmanet-ipam alone missing is only a warning (only other CNIs need it).
    write(node.root / "opt/cni/bin/rdmanet", "x", 0755);
    fs::remove(node.root / "opt/cni/bin/rdmanet-ipam");
    const auto all = node.run();
    CHECK(with_status(all, Status::fail).empty());
    CHECK(with_status(all, Status::warn, "cni.binary").size() == 1);
}

TEST_CASE("doctor: an rdmanet config the plugin would refuse fails with its message", "[ctl][doctor]") {
    FakeNode node;
    write(node.root / "etc/cni/net.d/20-bad.conf",
          R"({"cniVersion":"1.0.0","name":"bad","type":"rdmanet","mode":"macvlan"})");
    auto f = only_failure(node, "cni.config");
    CHECK_THAT(f.subject, Catch::EndsWith("20-bad.conf"));
    CHECK_THAT(f.message, Catch::Contains("is required in macvlan mode"));
    // Configs of other plugins are not ours to judge.
    fs::remove(node.root / "etc/cni/net.d/20-bad.conf");
    write(node.root / "etc/cni/net.d/05-other.conf", R"({"cniVersion":"1.0.0","name":"o","type":"bridge"})");
    CHECK(with_status(node.run(), Status::fail).empty());
    fs::remove_all(node.root / "etc/cni/net.d");
    CHECK(with_status(node.run(), Status::fail, "cni.config").size() == 1);
}

TEST_CASE("doctor: a malformed node policy fails (every ADD would)", "[ctl][doctor]") {
    FakeNode node;
    write(node.root / "etc/cni/net.d/rdmanet.d/policy.json", R"({"version":1,"modez":["macvlan"]})");
    auto f = only_failure(node, "node.policy");
    CHECK_THAT(f.message, Catch::Contains("every ADD on this node fails"));
}

TEST_CASE("doctor: the node policy is reported even without a CNI config dir", "[ctl][doctor]") {
    FakeNode node;
    fs::remove_all(node.root / "etc/cni/net.d");
    const auto all = node.run();
    CHECK(with_status(all, Status::fail, "cni.config").size() == 1);
    const auto policy = with_status(all, Status::warn, "node.policy");
    REQUIRE(policy.size() == 1);
    CHECK(policy[0].subject == "/etc/cni/net.d/rdmanet.d/policy.json");
    CHECK_THAT(policy[0].message, Catch::Contains("built-in defaults apply"));
}

TEST_CASE("doctor: IPAM kubeconfig problems", "[ctl][doctor]") {
    FakeNode node;
    SECTION("expired token") {
        node.kubeconfig(jwt_expiring_in(-std::chrono::minutes(90)));
        CHECK_THAT(only_failure(node, "ipam.kubeconfig").message,
                   Catch::Contains("token expired") && Catch::Contains("install --watch"));
    }
    SECTION("readable by others") {
        node.kubeconfig(jwt_expiring_in(std::chrono::hours(1)), 0644);
        CHECK_THAT(only_failure(node, "ipam.kubeconfig").message, Catch::Contains("chmod 0600"));
    }
    SECTION("not YAML") {
        write(node.root / "etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig", "clusters: [unclosed\n", 0600);
        CHECK_THAT(only_failure(node, "ipam.kubeconfig").message, Catch::Contains("not valid YAML"));
    }
    SECTION("no current context") {
        write(node.root / "etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig", "apiVersion: v1\nkind: Config\n", 0600);
        CHECK_THAT(only_failure(node, "ipam.kubeconfig").message, Catch::Contains("no current-context"));
    }
    SECTION("plain http server and no credentials") {
        write(node.root / "etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig",
              "clusters:\n- name: c\n  cluster: {server: 'http://10.0.0.1'}\nusers:\n- name: u\n  user: {}\n"
              "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
              0600);
        auto f = only_failure(node, "ipam.kubeconfig");
        CHECK_THAT(f.message, Catch::Contains("not an https:// URL") && Catch::Contains("no token"));
    }
    SECTION("missing is a warning") {
        fs::remove(node.root / "etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig");
        const auto all = node.run();
        CHECK(with_status(all, Status::fail).empty());
        CHECK(with_status(all, Status::warn, "ipam.kubeconfig").size() == 1);
    }
    SECTION("API unreachable with --check-api") {
        node.options.check_api = true;
        std::chrono::milliseconds seen{0};
        node.options.probe_api = [&](const rdmanet::ipam::kube::KubeConfig& kc, std::chrono::milliseconds timeout) {
            seen = timeout;
            CHECK(kc.server.starts_with("https://"));
            return std::string("https://10.96.0.1:443: Connection timed out");
        };
        node.options.api_timeout = std::chrono::milliseconds(1500);
        CHECK_THAT(only_failure(node, "ipam.kubeconfig").message, Catch::Contains("not reachable"));
        CHECK(seen == std::chrono::milliseconds(1500));
        node.options.probe_api = [](const rdmanet::ipam::kube::KubeConfig&, std::chrono::milliseconds) {
            return std::string();
        };
        CHECK(with_status(node.run(), Status::fail).empty());
    }
    SECTION("the real probe against a closed port reports the connection error") {
        node.options.check_api = true;
        write(
            node.root / "etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig",
            "clusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\nusers:\n- name: u\n  user: {token: t}\n"
            "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
            0600);
        CHECK_THAT(only_failure(node, "ipam.kubeconfig").message, Catch::Contains("127.0.0.1"));
    }
}

TEST_CASE("doctor: containerd's base_runtime_spec RLIMIT_MEMLOCK", "[ctl][doctor]") {
    FakeNode node;
    node.base_spec(R"([{"type":"RLIMIT_MEMLOCK","hard":65536,"soft":65536}])");
    auto f = only_failure(node, "runtime.memlock");
    CHECK(f.subject == "/etc/containerd/cri-base.json");
    CHECK_THAT(f.message, Catch::Contains("64 KiB") && Catch::Contains("Couldn't allocate MR"));

    node.base_spec(R"([{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}])");
    auto all = node.run();
    CHECK(with_status(all, Status::fail).empty());
    CHECK(with_status(all, Status::warn, "runtime.memlock").size() == 1);

    // No base spec: the containerd unit's LimitMEMLOCK decides.
    write(node.root / "etc/containerd/config.toml", "version = 2\n");
    all = node.run();
    CHECK(with_status(all, Status::warn, "runtime.memlock").size() == 1);
    write(node.root / "etc/systemd/system/containerd.service.d/memlock.conf", "[Service]\nLimitMEMLOCK=infinity\n");
    all = node.run();
    CHECK(with_status(all, Status::warn).empty());
    CHECK(with_status(all, Status::fail).empty());
}

TEST_CASE("doctor: dockerd default-ulimits memlock", "[ctl][doctor]") {
    FakeNode node;
    fs::remove(node.root / "etc/containerd/config.toml");
    write(node.root / "etc/docker/daemon.json",
          R"({"default-ulimits":{"memlock":{"Name":"memlock","Hard":65536,"Soft":65536}}})");
    CHECK(only_failure(node, "runtime.memlock").subject == "/etc/docker/daemon.json");
    write(node.root / "etc/docker/daemon.json",
          R"({"default-ulimits":{"memlock":{"Name":"memlock","Hard":-1,"Soft":-1}}})");
    CHECK(with_status(node.run(), Status::fail).empty());
    write(node.root / "etc/docker/daemon.json", R"({"log-driver":"json-file"})");
    CHECK(with_status(node.run(), Status::warn, "runtime.memlock").size() == 1);
    fs::remove(node.root / "etc/docker/daemon.json");
    CHECK_THAT(with_status(node.run(), Status::warn, "runtime.memlock").at(0).message,
               Catch::Contains("no containerd, dockerd or CRI-O configuration"));
}

TEST_CASE("doctor: JSON report and exit status", "[ctl][doctor]") {
    FakeNode node;
    node.port("mlx5_0", "1", "1: DOWN", "2: Polling", "InfiniBand");
    node.options.json = true;
    std::ostringstream out, err;
    CHECK(run_doctor(node.options, out, err) == 1);
    const auto report = json::parse(out.str());
    CHECK(report["ok"] == false);
    bool found = false;
    for (const auto& c : report["checks"])
        if (c["status"] == "fail") {
            found = true;
            CHECK(c["check"] == "rdma.ports");
            CHECK(c["subject"] == "mlx5_0 port 1");
        }
    CHECK(found);
    // The effective policy, from the node's policy file.
    CHECK(report["policy"]["modes"] == json({"macvlan", "hostdev"}));

    node.options.json = false;
    std::ostringstream table, err2;
    CHECK(run_doctor(node.options, table, err2) == 1);
    CHECK_THAT(table.str(),
               Catch::StartsWith("STATUS") && Catch::Contains("FAIL    rdma.ports") && Catch::Contains("1 problem(s)"));
}

TEST_CASE("doctor: tuning's allowlist is named with its entries as node-policy globs", "[ctl][doctor]") {
    FakeNode node;
    write(node.root / "etc/cni/tuning/allowlist.conf",
          "^net\\.ipv4\\.conf\\.[^.]+\\.arp_.*$\n\n^net\\.core\\.somaxconn$\nnet.ipv6.conf.IFNAME.accept_dad\n");
    const auto all = node.run();
    INFO(describe(all));
    const auto found = with_status(all, Status::warn, "cni.tuning-allowlist");
    REQUIRE(found.size() == 1);
    CHECK(found[0].subject == "/etc/cni/tuning/allowlist.conf");
    CHECK_THAT(found[0].message,
               Catch::Contains(R"("sysctls": ["net.ipv4.conf.IFNAME.arp_*","net.ipv6.conf.IFNAME.accept_dad"])"));
    CHECK_THAT(found[0].message, Catch::Contains("somaxconn"));
    // Without the file, nothing is said.
    FakeNode plain;
    CHECK(with_status(plain.run(), Status::warn, "cni.tuning-allowlist").empty());
}

TEST_CASE("translate_tuning_allowlist: anchors, escaped dots and wildcards become globs", "[ctl][doctor]") {
    const auto t = rdmanet::cni::doctor::translate_tuning_allowlist(
        "^net\\.ipv4\\.neigh\\..*\\.ucast_solicit$\nnet.ipv4.conf.all.rp_filter\n(a|b)\n");
    CHECK(t.globs == std::vector<std::string>{"net.ipv4.neigh.IFNAME.ucast_solicit"});
    CHECK(t.untranslated == std::vector<std::string>{"net.ipv4.conf.all.rp_filter", "(a|b)"});
}
