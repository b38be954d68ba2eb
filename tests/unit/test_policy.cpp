// The node policy: parsing the admin's file, path containment, device allow-lists, the IPAM's
// path limits, the rendering doctor/install use, and confined (symlink-free) file opening.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "ipam_test_util.hpp"
#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/modes/device_policy.hpp"
#include "rdmanet/cni/policy/checks.hpp"
#include "rdmanet/base/confined_file.hpp"
#include "rdmanet/ipam/core/error.hpp"

using namespace rdmanet::cni;
using rdmanet::base::ConfinedFileError;
using rdmanet::ipam::IpamError;
using rdmanet::base::is_path_inside;
using nlohmann::json;

namespace {

Error policy_error_of(const std::string& text) {
    try {
        parse_node_policy(text, "/etc/cni/net.d/rdmanet.d/policy.json", mode_names());
    } catch (const Error& e) {
        return e;
    }
    FAIL("expected the policy to be refused: " << text);
    return Error(0, "");
}

Error refusal_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e;
    }
    FAIL("expected a refusal");
    return Error(0, "");
}

HostDevice device(const std::string& name, const std::string& pci = "", const std::string& vendor = "",
                  bool vf = false) {
    HostDevice d;
    d.link.name = name;
    d.link.index = 7;
    d.pci_address = pci;
    d.vendor_id = vendor;
    d.is_vf = vf;
    return d;
}

}  // namespace

TEST_CASE("is_path_inside: lexical containment without . or ..", "[unit][policy]") {
    CHECK(is_path_inside("/var/log/rdmanet/a.log", "/var/log/rdmanet"));
    CHECK(is_path_inside("/var/log/rdmanet/sub/a.log", "/var/log/rdmanet/"));
    CHECK(is_path_inside("/var/log//rdmanet//a.log", "/var/log/rdmanet"));
    CHECK_FALSE(is_path_inside("/var/log/rdmanet", "/var/log/rdmanet"));             // the dir itself
    CHECK_FALSE(is_path_inside("/var/log/rdmanet-evil/a.log", "/var/log/rdmanet"));  // prefix is not a parent
    CHECK_FALSE(is_path_inside("/var/log/rdmanet/../../etc/passwd", "/var/log/rdmanet"));
    CHECK_FALSE(is_path_inside("/var/log/rdmanet/./a.log", "/var/log/rdmanet"));
    CHECK_FALSE(is_path_inside("var/log/rdmanet/a.log", "/var/log/rdmanet"));
    CHECK_FALSE(is_path_inside("/etc/passwd", "/var/log/rdmanet"));
    CHECK_FALSE(is_path_inside("/var/log/rdmanet/a\n.log", "/var/log/rdmanet"));
    CHECK_FALSE(is_path_inside("", "/var/log/rdmanet"));
}

TEST_CASE("no policy file: the safe defaults", "[unit][policy]") {
    const NodePolicy p = load_node_policy(
        [](const char* name) -> std::optional<std::string> {
            if (std::string(name) == "RDMANET_POLICY_FILE") return "/nonexistent/rdmanet-policy.json";
            return std::nullopt;
        },
        mode_names());
    CHECK(p.source.empty());
    CHECK_FALSE(p.modes);
    CHECK(p.log_dir == "/var/log/rdmanet");
    CHECK(p.audit_log == "/var/log/rdmanet/policy.log");
    CHECK(p.kubeconfig_dirs == std::vector<std::string>{"/etc/cni/net.d"});
    CHECK(p.ipam_config_dirs == std::vector<std::string>{"/etc/cni/net.d"});
    CHECK(p.ipam_data_dirs == std::vector<std::string>{"/var/lib/cni/rdmanet"});
    CHECK(p.state_dir == "/var/lib/cni/rdmanet/state");
    // Multus' own directory, both spellings (/var/run is usually a symlink to /run).
    CHECK(p.device_info_dirs ==
          std::vector<std::string>{"/var/run/k8s.cni.cncf.io/devinfo", "/run/k8s.cni.cncf.io/devinfo"});
    CHECK(p.masters.allow_uplink);
    CHECK_FALSE(p.devices.vfs_only);
    CHECK(policy_file_path([](const char*) { return std::nullopt; }) == "/etc/cni/net.d/rdmanet.d/policy.json");
}

TEST_CASE("policy file: every key read, normalised", "[unit][policy]") {
    const auto p = parse_node_policy(R"({
        "version": 1, "modes": ["hostdev", "sriov"],
        "devices": {"names": ["ib*"], "pciAddresses": ["0000:AF:*"], "vendorIds": ["0x15B3"], "vfsOnly": true},
        "masters": {"names": ["bond0"], "allowUplink": false},
        "logDir": "/var/log/rdm/", "auditLog": "/var/log/rdm/audit.log",
        "kubeconfigDirs": ["/etc/cni/net.d/rdmanet.d"], "ipamConfigDirs": ["/etc/rdmanet"],
        "ipamDataDirs": ["/data/ipam"], "deviceInfoDirs": ["/run/devinfo/"], "stateDir": "/run/rdmanet"})",
                                     "f.json", mode_names());
    CHECK(p.source == "f.json");
    CHECK(*p.modes == std::vector<std::string>{"hostdev", "sriov"});
    CHECK(p.devices.names == std::vector<std::string>{"ib*"});
    CHECK(p.devices.pci_addresses == std::vector<std::string>{"0000:af:*"});
    CHECK(p.devices.vendor_ids == std::vector<std::string>{"15b3"});
    CHECK(p.devices.vfs_only);
    CHECK_FALSE(p.masters.allow_uplink);
    CHECK(p.log_dir == "/var/log/rdm");
    CHECK(p.audit_log == "/var/log/rdm/audit.log");
    CHECK(p.state_dir == "/run/rdmanet");
    CHECK(p.device_info_dirs == std::vector<std::string>{"/run/devinfo"});

    SECTION("the rendering round-trips") {
        json j = policy_to_json(p, mode_names());
        CHECK(j["source"] == "f.json");
        j.erase("source");
        j.erase("builtIn");
        auto again = policy_to_json(parse_node_policy(j.dump(), "again", mode_names()), mode_names());
        again.erase("source");
        again.erase("builtIn");
        CHECK(again == j);
    }
}

TEST_CASE("policy file mistakes fail closed, naming the key", "[unit][policy]") {
    struct Case {
        const char* text;
        const char* names;
    } cases[] = {
        {R"({"logdir": "/var/log/x"})", "logdir"},
        {R"({"devices": {"name": ["x"]}})", "devices.name"},
        {R"({"logDir": "var/log"})", "logDir"},
        {R"({"logDir": "/var/log/../etc"})", "logDir"},
        {R"({"kubeconfigDirs": ["relative"]})", "kubeconfigDirs"},
        {R"({"ipamDataDirs": "/data"})", "ipamDataDirs"},
        {R"({"deviceInfoDirs": ["/run/../etc"]})", "deviceInfoDirs"},
        {R"({"modes": ["macvlan", "bridge"]})", "bridge"},
        {R"({"devices": {"vendorIds": ["mellanox"]}})", "vendorIds"},
        {R"({"masters": {"allowUplink": "no"}})", "allowUplink"},
        {R"({"masters": {"allowUplink": null}})", "masters.allowUplink must be true or false, got null"},
        {R"({"logDir": null})", "logDir must be a string, got null"},
        {R"({"devices": {"names": [""]}})", "devices.names must be a list of non-empty strings"},
        {R"({"auditLog": "/etc/audit.log"})", "auditLog"},
        {R"({"version": 2})", "version"},
        {R"([1])", "object"},
        {R"({"logDir": )", "JSON"},
    };
    for (const auto& c : cases) {
        INFO(c.text);
        const auto e = policy_error_of(c.text);
        CHECK(e.code() == 4);
        CHECK(e.msg().find(c.names) != std::string::npos);
        CHECK(e.msg().find("policy.json") != std::string::npos);
        CHECK(e.details().find("node admin") != std::string::npos);
    }
}

TEST_CASE("a policy file that exists but is a symlink is refused, not followed", "[unit][policy]") {
    ipam_test::TempDir dir;
    std::ofstream(dir.sub("real.json")) << R"({"logDir": "/tmp"})";
    std::filesystem::create_symlink(dir.sub("real.json"), dir.sub("policy.json"));
    const auto lookup = [&](const char*) -> std::optional<std::string> { return dir.sub("policy.json"); };
    const auto e = refusal_of([&] { load_node_policy(lookup, mode_names()); });
    CHECK(e.code() == 4);
    std::filesystem::remove(dir.sub("policy.json"));
    std::filesystem::rename(dir.sub("real.json"), dir.sub("policy.json"));
    CHECK(load_node_policy(lookup, mode_names()).log_dir == "/tmp");
}

TEST_CASE("default_policy_file_content parses back to the defaults", "[unit][policy]") {
    const auto text = default_policy_file_content(mode_names());
    const auto p = parse_node_policy(text, "installed", mode_names());
    auto a = policy_to_json(p, mode_names());
    auto b = policy_to_json(NodePolicy{}, mode_names());
    a.erase("source");
    b.erase("source");
    CHECK(a == b);
    CHECK(text.find("\"logDir\": \"/var/log/rdmanet\"") != std::string::npos);
}

TEST_CASE("device allow-lists: AND between lists, OR within one", "[unit][policy]") {
    DeviceRules rules;
    CHECK(device_rules_mismatch(rules, device("eth9"), false).empty());  // empty = any

    rules.names = {"ib*", "mlx_?"};
    CHECK(device_rules_mismatch(rules, device("ib0"), false).empty());
    CHECK(device_rules_mismatch(rules, device("mlx_3"), false).empty());
    CHECK(device_rules_mismatch(rules, device("eth0"), false).find("\"eth0\" matches none") != std::string::npos);

    HostDevice alt = device("enp1s0");
    alt.link.altnames = {"ib-alt"};
    CHECK(device_rules_mismatch(rules, alt, false).empty());  // an altname counts

    rules.vendor_ids = {"15b3"};
    CHECK(device_rules_mismatch(rules, device("ib0", "0000:af:00.2", "15b3"), false).empty());
    CHECK(device_rules_mismatch(rules, device("ib0", "0000:af:00.2", "8086"), false).find("vendor id 8086") !=
          std::string::npos);

    rules.pci_addresses = {"0000:af:*"};
    CHECK(device_rules_mismatch(rules, device("ib0", "0000:af:00.2", "15b3"), false).empty());
    CHECK(device_rules_mismatch(rules, device("ib0", "0000:3b:00.2", "15b3"), false).find("0000:3b:00.2") !=
          std::string::npos);
    CHECK(device_rules_mismatch(rules, device("ib0", "", "15b3"), false).find("not a PCI function") !=
          std::string::npos);

    rules.vfs_only = true;
    CHECK(device_rules_mismatch(rules, device("ib0", "0000:af:00.2", "15b3", false), false).find("vfsOnly") !=
          std::string::npos);
    CHECK(device_rules_mismatch(rules, device("ib0", "0000:af:00.2", "15b3", true), false).empty());
    // vfsOnly is about moved devices; a master is a PF by nature.
    CHECK(device_rules_mismatch(rules, device("ib0", "0000:af:00.2", "15b3", false), true).empty());
}

TEST_CASE("config checks: modes, log file, allowed dirs (code 7, key and place named)", "[unit][policy]") {
    NodePolicy p;
    p.audit_log.clear();               // no audit file from unit tests
    check_mode_allowed(p, "hostdev");  // absent = every mode
    p.modes = std::vector<std::string>{"macvlan"};
    check_mode_allowed(p, "macvlan");
    auto e = refusal_of([&] { check_mode_allowed(p, "hostdev"); });
    CHECK(e.code() == 7);
    CHECK(e.msg().find("\"hostdev\" is not allowed") != std::string::npos);
    CHECK(e.msg().find("macvlan") != std::string::npos);

    check_log_file(p, "logFile", "");
    check_log_file(p, "logFile", "/var/log/rdmanet/net.log");
    for (const char* bad : {"/etc/cron.d/x", "/var/log/rdmanet/../../etc/x", "/var/log/rdmanet", "relative.log"}) {
        INFO(bad);
        e = refusal_of([&] { check_log_file(p, "logFile", bad); });
        CHECK(e.code() == 7);
        CHECK(e.msg().starts_with("logFile "));
        CHECK(e.msg().find("/var/log/rdmanet") != std::string::npos);
    }
    e = refusal_of(
        [&] { check_path_in(p, "ipam.kubernetes.kubeconfig", "/var/lib/kubelet/kubeconfig", p.kubeconfig_dirs); });
    CHECK(e.msg().find("ipam.kubernetes.kubeconfig \"/var/lib/kubelet/kubeconfig\"") != std::string::npos);
    CHECK(e.msg().find("/etc/cni/net.d") != std::string::npos);
}

TEST_CASE("device-info files of a device plugin or DRA driver (dp/) are never the plugin's", "[unit][policy]") {
    NodePolicy p;
    p.audit_log.clear();
    // The driver's file (resourceName/deviceID, '/' turned into '-') and Multus' CNI-side copy.
    const std::string dp = "/var/run/k8s.cni.cncf.io/devinfo/dp/nvidia.com-rdma_vf-0000:3b:00.2-device.json";
    const std::string cni = "/var/run/k8s.cni.cncf.io/devinfo/cni/rdma-net-abc_net1-device.json";
    CHECK(is_device_plugin_info_file(dp, p.device_info_dirs));
    CHECK(is_device_plugin_info_file("/run/k8s.cni.cncf.io/devinfo//dp/x-device.json", p.device_info_dirs));
    CHECK_FALSE(is_device_plugin_info_file(cni, p.device_info_dirs));
    CHECK_FALSE(is_device_plugin_info_file("/var/run/k8s.cni.cncf.io/devinfo/dp", p.device_info_dirs));
    // A policy that moves the tree: its dp/ is the driver's too, and so stay the standard ones.
    CHECK(is_device_plugin_info_file("/srv/devinfo/dp/a-device.json", {"/srv/devinfo"}));
    CHECK(is_device_plugin_info_file(dp, {"/srv/devinfo"}));
    CHECK_FALSE(is_device_plugin_info_file("/srv/devinfo/cni/a-device.json", {"/srv/devinfo"}));

    CHECK_NOTHROW(check_not_device_plugin_info_file(p, "runtimeConfig.CNIDeviceInfoFile", cni));
    const Error e = refusal_of([&] { check_not_device_plugin_info_file(p, "runtimeConfig.CNIDeviceInfoFile", dp); });
    CHECK(e.code() == 7);
    CHECK(e.msg().starts_with("runtimeConfig.CNIDeviceInfoFile \"" + dp + "\""));
    CHECK(e.msg().find("cni/ directory") != std::string::npos);
}

TEST_CASE("IPAM path limits: every file key checked, only when enforced", "[unit][policy]") {
    using rdmanet::ipam::check_path_limits;
    const NodePolicy p;
    auto limits = p.ipam_limits();
    std::vector<std::string> told;
    limits.on_refusal = [&](const std::string& msg) { told.push_back(msg); };
    const json base = {{"type", "rdmanet-ipam"}, {"range", "10.0.0.0/24"}};

    auto refused = [&](const json& ipam) -> std::string {
        try {
            check_path_limits(ipam, limits);
        } catch (const IpamError& e) {
            CHECK(e.code == 7);
            return e.msg;
        }
        return "";
    };
    CHECK(refused(base).empty());
    json ok = base;
    ok["configuration_path"] = "/etc/cni/net.d/whereabouts.d/whereabouts.conf";
    ok["kubernetes"] = {{"kubeconfig", "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig"}};
    ok["log_file"] = "/var/log/rdmanet/ipam.log";
    ok["data_dir"] = "/var/lib/cni/rdmanet/other";
    CHECK(refused(ok).empty());
    ok["data_dir"] = std::string(rdmanet::ipam::kDefaultDataDir);
    CHECK(refused(ok).empty());
    // A directory key may name an allowed root itself; a file key only a file below one.
    ok["data_dir"] = p.ipam_data_dirs.front();
    CHECK(refused(ok).empty());
    json root_as_file = base;
    root_as_file["configuration_path"] = p.ipam_config_dirs.front();
    CHECK(refused(root_as_file).starts_with("ipam.configuration_path"));
    told.clear();

    struct Case {
        const char* key;
        json value;
        const char* field;
        const char* place;
    } cases[] = {
        {"configuration_path", "/root/.ssh/id_rsa", "ipam.configuration_path", "/etc/cni/net.d"},
        {"configuration_path", "/etc/cni/net.d/../../shadow", "ipam.configuration_path", "/etc/cni/net.d"},
        {"log_file", "/etc/ld.so.preload", "ipam.log_file", "/var/log/rdmanet"},
        {"kubernetes", {{"kubeconfig", "/var/lib/kubelet/kubeconfig"}}, "ipam.kubernetes.kubeconfig", "/etc/cni/net.d"},
        {"data_dir", "/etc", "ipam.data_dir", "/var/lib/cni/rdmanet"},
    };
    for (const auto& c : cases) {
        json ipam = base;
        ipam[c.key] = c.value;
        INFO(ipam.dump());
        const auto msg = refused(ipam);
        CHECK(msg.starts_with(c.field));
        CHECK(msg.find(c.place) != std::string::npos);
    }
    CHECK(told.size() == std::size(cases));

    limits.enforced = false;
    json anything = base;
    anything["data_dir"] = "/etc";
    CHECK_NOTHROW(check_path_limits(anything, limits));
}

TEST_CASE("a configuration_path outside the allowed dirs is refused before it is opened", "[unit][policy]") {
    ipam_test::TempDir allowed, outside;
    // A FIFO: opening it for reading would block this test forever.
    REQUIRE(::mkfifo(outside.sub("flat.conf").c_str(), 0600) == 0);
    rdmanet::ipam::PathLimits limits = NodePolicy{}.ipam_limits();
    limits.config_dirs = {allowed.path()};
    const json ipam = {{"range", "10.0.0.0/24"}, {"configuration_path", outside.sub("flat.conf")}};
    CHECK_THROWS_AS(rdmanet::ipam::load_ipam_config(ipam, rdmanet::ipam::Strictness::strict, limits), IpamError);

    SECTION("inside, a FIFO is refused as not a regular file instead of blocking") {
        REQUIRE(::mkfifo(allowed.sub("flat.conf").c_str(), 0600) == 0);
        json in = ipam;
        in["configuration_path"] = allowed.sub("flat.conf");
        CHECK_THROWS_WITH(rdmanet::ipam::load_ipam_config(in, rdmanet::ipam::Strictness::strict, limits),
                          Catch::Contains("not a regular file"));
    }
    SECTION("inside, the flat file is merged and its kubeconfig checked too") {
        std::ofstream(allowed.sub("flat.conf")) << R"({"kubernetes": {"kubeconfig": "/var/lib/kubelet/kubeconfig"}})";
        json in = ipam;
        in["configuration_path"] = allowed.sub("flat.conf");
        CHECK_THROWS_WITH(rdmanet::ipam::load_ipam_config(in, rdmanet::ipam::Strictness::strict, limits),
                          Catch::Contains("ipam.kubernetes.kubeconfig"));
    }
}

TEST_CASE("open_confined: no symlink below the allowed dir, 0600 files, 0700 dirs", "[unit][policy]") {
    using rdmanet::base::CreateDirs;
    using rdmanet::base::open_confined;
    ipam_test::TempDir root, elsewhere;
    const std::string dir = root.sub("logs");
    ::umask(022);

    {
        auto fd = open_confined(dir, dir + "/a/b/net.log", O_WRONLY | O_CREAT | O_APPEND, 0600, CreateDirs::yes);
        REQUIRE(fd);
    }
    struct stat st {};
    REQUIRE(::stat((dir + "/a/b/net.log").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(::stat((dir + "/a").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);

    // A directory symlink below the allowed dir: refused, nothing created at its target.
    std::filesystem::create_symlink(elsewhere.path(), dir + "/link");
    try {
        open_confined(dir, dir + "/link/x.log", O_WRONLY | O_CREAT, 0600, CreateDirs::yes);
        FAIL("followed a directory symlink");
    } catch (const ConfinedFileError& e) {
        CHECK(e.errno_value == ELOOP);
    }
    CHECK(std::filesystem::is_empty(elsewhere.path()));

    // A file symlink: refused, its target untouched.
    std::ofstream(elsewhere.sub("victim")) << "precious";
    std::filesystem::create_symlink(elsewhere.sub("victim"), dir + "/evil.log");
    try {
        open_confined(dir, dir + "/evil.log", O_WRONLY | O_CREAT | O_APPEND, 0600);
        FAIL("followed a file symlink");
    } catch (const ConfinedFileError& e) {
        CHECK(e.errno_value == ELOOP);
    }
    std::ifstream in(elsewhere.sub("victim"));
    std::string content;
    in >> content;
    CHECK(content == "precious");

    CHECK_THROWS_AS(open_confined(dir, "/etc/passwd", O_RDONLY, 0), ConfinedFileError);
}
