#include <catch2/catch.hpp>

#include "rdmanet/cni/modes/net_conf.hpp"
#include "rdmanet/cni/modes/macvlan/mode.hpp"
#include "rdmanet/cni/modes/hostdev/mode.hpp"
#include "rdmanet/cni/modes/registry.hpp"
#include "cni_test_helpers.hpp"
#include "rdmanet/cni/config/config.hpp"

using namespace rdmanet::cni;
using nlohmann::json;
using Strings = std::vector<std::string>;

namespace {

json macvlan_config() {
    return json::parse(R"({
      "cniVersion":"1.0.0","name":"rdma-net","type":"rdmanet","mode":"macvlan","master":"ens1f0",
      "ipam":{"type":"rdmanet-ipam","range":"192.168.100.0/24"}})");
}

json hostdev_config() {
    return json::parse(R"({"cniVersion":"1.0.0","name":"rdma-net","type":"rdmanet","mode":"hostdev",
                           "device":"ens2f0"})");
}

json with(json j, const std::string& key, json value) {
    j[key] = std::move(value);
    return j;
}

json without(json j, const std::string& key) {
    j.erase(key);
    return j;
}

NetConf parse(const json& j, Command command = Command::add) { return parse_net_conf(j.dump(), command); }

Error config_error(const json& j, Command command = Command::add) {
    return testing::expect_cni_error([&] { parse(j, command); });
}

Error config_error_text(std::string_view text, Command command = Command::add) {
    return testing::expect_cni_error([&] { parse_net_conf(text, command); });
}

}  // namespace

// --- accepted configs -------------------------------------------------------------------------

TEST_CASE("config: a full macvlan config as Multus delivers it", "[cni][config]") {
    json j = json::parse(R"({
      "cniVersion":"1.1.0","name":"rdma-net","type":"rdmanet","mode":"macvlan",
      "master":"ens1f0","macvlanMode":"vepa","mtu":9000,"mac":"0A:58:0A:01:00:05",
      "ipam":{"type":"rdmanet-ipam","range":"192.168.100.0/24"},
      "dns":{"nameservers":["10.0.0.10"],"search":["svc"]},
      "logFile":"/var/log/rdmanet.log","logLevel":"debug",
      "capabilities":{"mac":true,"ips":true,"deviceID":true},
      "deviceID":"0","pciBusID":"not-used-in-macvlan",
      "runtimeConfig":{"mac":"c2:b0:57:49:47:f1","ips":["192.168.100.7/24","fd00::7"],
                       "deviceID":"3","infinibandGUID":"C2:11:22:33:44:55:66:77",
                       "CNIDeviceInfoFile":"/var/run/k8s.cni.cncf.io/devinfo/cni/rdma-net-abc_net1",
                       "portMappings":[{"hostPort":80}]},
      "args":{"cni":{"ips":["192.168.100.8"],"labels":[{"key":"a","value":"b"}]}},
      "prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.244.1.7/24"}]},
      "someMultusKey":{"anything":[1,2,3]}})");
    NetConf conf = parse(j);
    CHECK(conf.cni_version == "1.1.0");
    CHECK(conf.name == "rdma-net");
    CHECK(conf.type == "rdmanet");
    CHECK(conf.mode == "macvlan");
    CHECK(conf.settings.get<MacvlanConf>().master == "ens1f0");
    CHECK(conf.settings.get<MacvlanConf>().mode == "vepa");
    CHECK(conf.settings.get<MacvlanConf>().mtu == 9000);
    CHECK(conf.settings.get<MacvlanConf>().mac == "0a:58:0a:01:00:05");  // lower-cased
    CHECK(conf.ipam.type == "rdmanet-ipam");
    CHECK(conf.ipam.raw == j["ipam"]);
    CHECK(conf.dns.nameservers == Strings{"10.0.0.10"});
    CHECK(conf.dns.search == Strings{"svc"});
    CHECK(conf.log_file == "/var/log/rdmanet.log");
    CHECK(conf.log_level == "debug");
    CHECK(conf.runtime.mac == "c2:b0:57:49:47:f1");
    CHECK(conf.runtime.ips == Strings{"192.168.100.7/24", "fd00::7"});
    CHECK(conf.runtime.device_id == "3");
    CHECK(conf.runtime.infiniband_guid == "c2:11:22:33:44:55:66:77");
    CHECK(conf.runtime.device_info_file == "/var/run/k8s.cni.cncf.io/devinfo/cni/rdma-net-abc_net1");
    CHECK(conf.args_cni_ips == Strings{"192.168.100.8"});
    REQUIRE(conf.prev_result);
    CHECK(conf.prev_result->ips.at(0).address.str() == "10.244.1.7/24");
    CHECK_FALSE(conf.valid_attachments);
    CHECK(conf.raw == j);
    CHECK(conf.settings.get<HostdevConf>().pci_address.empty());  // hostdev keys are not read in macvlan mode
}

TEST_CASE("config: defaults of a minimal macvlan config", "[cni][config]") {
    NetConf conf = parse(without(macvlan_config(), "ipam"));
    CHECK(conf.settings.get<MacvlanConf>().mode == "bridge");
    CHECK(conf.settings.get<MacvlanConf>().mtu == 0);
    CHECK_FALSE(conf.settings.get<MacvlanConf>().mac);
    CHECK(conf.ipam.type.empty());
    CHECK(conf.ipam.raw == json::object());
    CHECK(conf.dns.empty());
    CHECK(conf.log_file.empty());
    CHECK(conf.log_level == "info");
    CHECK_FALSE(conf.prev_result);
    CHECK(conf.runtime.ips.empty());
    CHECK_FALSE(conf.runtime.mac);
    CHECK(conf.args_cni_ips.empty());
    CHECK(parse(with(macvlan_config(), "ipam", json::object())).ipam.type.empty());
}

TEST_CASE("config: JSON null counts as absent", "[cni][config]") {
    json j = macvlan_config();
    j["mtu"] = nullptr;
    j["mac"] = nullptr;
    j["dns"] = nullptr;
    j["runtimeConfig"] = nullptr;
    NetConf conf = parse(j);
    CHECK(conf.settings.get<MacvlanConf>().mtu == 0);
    CHECK_FALSE(conf.settings.get<MacvlanConf>().mac);
}

TEST_CASE("config: every supported cniVersion is accepted for ADD", "[cni][config]") {
    for (const char* version : {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"})
        CHECK(parse(with(macvlan_config(), "cniVersion", version)).cni_version == version);
}

TEST_CASE("config: hostdev selectors", "[cni][config]") {
    SECTION("device, hwaddr and kernelpath") {
        json j = hostdev_config();
        j["hwaddr"] = "0A:58:0A:01:00:05";
        j["kernelpath"] = "/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0";
        NetConf conf = parse(j);
        CHECK(conf.mode == "hostdev");
        CHECK(conf.settings.get<HostdevConf>().device == "ens2f0");
        CHECK(conf.settings.get<HostdevConf>().hwaddr == "0a:58:0a:01:00:05");
        CHECK(conf.settings.get<HostdevConf>().kernelpath == "/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0");
        CHECK(conf.settings.get<HostdevConf>().pci_address.empty());
        CHECK(conf.settings.get<MacvlanConf>().master.empty());  // macvlan keys are not read in hostdev mode
    }
    SECTION("PCI precedence runtimeConfig.deviceID > deviceID > pciBusID") {
        json j = without(hostdev_config(), "device");
        j["pciBusID"] = "0000:03:00.1";
        CHECK(parse(j).settings.get<HostdevConf>().pci_address == "0000:03:00.1");
        j["deviceID"] = "0000:AF:06.0";
        CHECK(parse(j).settings.get<HostdevConf>().pci_address == "0000:af:06.0");  // lower-cased
        j["runtimeConfig"] = {{"deviceID", "0000:af:06.7"}};
        CHECK(parse(j).settings.get<HostdevConf>().pci_address == "0000:af:06.7");
    }
    SECTION("a lower-precedence key is not validated once a higher one chose the device") {
        json j = without(hostdev_config(), "device");
        j["deviceID"] = "0000:af:06.0";
        j["pciBusID"] = "garbage!";
        CHECK(parse(j).settings.get<HostdevConf>().pci_address == "0000:af:06.0");
    }
    SECTION("an auxiliary device id") {
        json j = with(without(hostdev_config(), "device"), "runtimeConfig", {{"deviceID", "mlx5_core.sf.4"}});
        CHECK(parse(j).settings.get<HostdevConf>().pci_address == "mlx5_core.sf.4");
    }
    SECTION("a shared device plugin index is not a device: the next key is used") {
        json j = without(hostdev_config(), "device");
        j["runtimeConfig"] = {{"deviceID", "0"}};
        j["pciBusID"] = "0000:03:00.1";
        CHECK(parse(j).settings.get<HostdevConf>().pci_address == "0000:03:00.1");
        j.erase("pciBusID");
        auto e = config_error(j);
        CHECK(e.code() == 7);
        CHECK_THAT(e.msg(), Catch::Matchers::Contains("hostdev mode needs a device"));
        // ...but with a named device the index is simply ignored.
        CHECK(parse(with(j, "device", "ens2f0")).settings.get<HostdevConf>().pci_address.empty());
    }
}

// --- decode failures (6) and version errors (1) ------------------------------------------------

TEST_CASE("config: JSON that does not parse or is not an object is code 6", "[cni][config]") {
    CHECK(config_error_text("").code() == 6);
    CHECK(config_error_text("{\"cniVersion\":\"1.0.0\",").code() == 6);
    CHECK(config_error_text("{\"cniVersion\":\"1.0.0\"} {}").code() == 6);
    auto not_object = config_error_text("[1,2]");
    CHECK(not_object.code() == 6);
    CHECK(not_object.msg() == "network configuration must be a JSON object, got array");
    CHECK(config_error_text("\"text\"").code() == 6);
    CHECK(config_error_text(std::string(100000, '[')).code() == 6);
    CHECK(config_error_text("{\"a\":" + std::string(200, '[') + std::string(200, ']') + "}").code() == 6);
    CHECK(config_error_text("", Command::del).code() == 6);  // DEL needs JSON too
}

TEST_CASE("config: unsupported or missing cniVersion is code 1 with skel's details", "[cni][config]") {
    auto e = config_error(with(macvlan_config(), "cniVersion", "0.2.0"));
    CHECK(e.code() == 1);
    CHECK(e.msg() == "incompatible CNI versions");
    CHECK(e.details() == R"(config is "0.2.0", plugin supports ["0.3.0" "0.3.1" "0.4.0" "1.0.0" "1.1.0"])");
    CHECK(config_error(with(macvlan_config(), "cniVersion", "1.2.0")).code() == 1);
    auto missing = config_error(without(macvlan_config(), "cniVersion"));
    CHECK(missing.code() == 1);
    CHECK_THAT(missing.details(), Catch::Matchers::StartsWith("config has no cniVersion"));
    CHECK(config_error(without(macvlan_config(), "cniVersion"), Command::del).code() == 1);
    auto wrong_type = config_error(with(macvlan_config(), "cniVersion", 1.0));
    CHECK(wrong_type.code() == 7);
    CHECK(wrong_type.msg() == "cniVersion must be a string, got 1.0");
}

TEST_CASE("config: verb gates by version", "[cni][config]") {
    json prev = json::parse(R"({"cniVersion":"0.4.0","ips":[{"address":"10.1.0.5/24"}]})");
    SECTION("CHECK needs 0.4.0") {
        auto e = config_error(with(with(macvlan_config(), "cniVersion", "0.3.1"), "prevResult", prev), Command::check);
        CHECK(e.code() == 1);
        CHECK(e.msg() == "config version does not allow CHECK");
        CHECK(e.details() == "config is \"0.3.1\", CHECK needs cniVersion 0.4.0 or later");
        CHECK(config_error(with(macvlan_config(), "cniVersion", "0.3.0"), Command::check).code() == 1);
        CHECK_NOTHROW(parse(with(with(macvlan_config(), "cniVersion", "0.4.0"), "prevResult", prev), Command::check));
    }
    SECTION("GC and STATUS need 1.1.0") {
        for (auto command : {Command::gc, Command::status}) {
            auto e = config_error(macvlan_config(), command);  // 1.0.0
            CHECK(e.code() == 1);
            CHECK_THAT(e.msg(), Catch::Matchers::StartsWith("config version does not allow"));
            CHECK(config_error(with(macvlan_config(), "cniVersion", "0.4.0"), command).code() == 1);
            CHECK_NOTHROW(parse(with(macvlan_config(), "cniVersion", "1.1.0"), command));
        }
    }
    SECTION("ADD and DEL exist in every supported version") {
        CHECK_NOTHROW(parse(with(macvlan_config(), "cniVersion", "0.3.0"), Command::add));
        CHECK_NOTHROW(parse(with(macvlan_config(), "cniVersion", "0.3.0"), Command::del));
    }
}

// --- invalid config (7) ---------------------------------------------------------------------

TEST_CASE("config: network name", "[cni][config]") {
    for (auto command : {Command::add, Command::del, Command::gc}) {
        json base = with(macvlan_config(), "cniVersion", "1.1.0");
        auto missing = config_error(without(base, "name"), command);
        CHECK(missing.code() == 7);
        CHECK(missing.msg() == "missing network name");
        CHECK(config_error(with(base, "name", ""), command).code() == 7);
        auto bad = config_error(with(base, "name", "my net"), command);
        CHECK(bad.code() == 7);
        CHECK_THAT(bad.msg(), Catch::Matchers::StartsWith("name \"my net\" is invalid"));
        CHECK(config_error(with(base, "name", "../../etc"), command).code() == 7);
        CHECK(config_error(with(base, "name", std::string(254, 'n')), command).code() == 7);
        // A huge bad value is cut in the message, which ends up in logs and on stdout.
        auto huge = config_error(with(base, "name", std::string(100000, '/')), command);
        CHECK(huge.msg().size() < 600);
        CHECK_THAT(huge.msg(), Catch::Matchers::Contains("////\"... is invalid"));
        auto wrong_type = config_error(with(base, "name", 5), command);
        CHECK(wrong_type.code() == 7);
        CHECK(wrong_type.msg() == "name must be a string, got 5");
    }
}

TEST_CASE("config: mode", "[cni][config]") {
    auto missing = config_error(without(macvlan_config(), "mode"));
    CHECK(missing.code() == 7);
    CHECK(missing.msg() == "mode is required: set it to \"macvlan\", \"hostdev\", \"sriov\" or \"ipoib\"");
    CHECK(config_error(without(macvlan_config(), "mode"), Command::check).code() == 7);

    auto unknown = config_error(with(macvlan_config(), "mode", "bridge"));
    CHECK(unknown.code() == 7);
    CHECK(unknown.msg() ==
          "mode \"bridge\" is not supported: use one of \"macvlan\", \"hostdev\", \"sriov\", \"ipoib\"");
    CHECK_THAT(unknown.details(), Catch::Matchers::Contains("macvlanMode"));
    CHECK(config_error(with(macvlan_config(), "mode", "MACVLAN")).code() == 7);
    auto wrong_type = config_error(with(macvlan_config(), "mode", json::array({"macvlan"})));
    CHECK(wrong_type.code() == 7);
    CHECK(wrong_type.msg() == "mode must be a string, got [\"macvlan\"]");
    for (auto name : {"macvlan", "hostdev", "sriov", "ipoib"}) {
        REQUIRE(find_mode_entry(name));
        CHECK(find_mode_entry(name)->name == name);
    }
    CHECK_FALSE(find_mode_entry("bridge"));
}

TEST_CASE("config: macvlan keys", "[cni][config]") {
    SECTION("master is required and must be an interface name") {
        auto missing = config_error(without(macvlan_config(), "master"));
        CHECK(missing.code() == 7);
        CHECK_THAT(missing.msg(), Catch::Matchers::StartsWith("master is required in macvlan mode"));
        auto slash = config_error(with(macvlan_config(), "master", "a/b"));
        CHECK(slash.code() == 7);
        CHECK(
            slash.msg() ==
            "master \"a/b\" is not a valid interface name: it contains '/' "
            "(an interface name is 1-15 bytes, not \".\" or \"..\", without '/', ':', '%', whitespace or control characters)");
        // No device can bear a '%': the kernel expands "%d" when it creates or renames one.
        auto percent = config_error(with(macvlan_config(), "master", "eth%d"));
        CHECK(percent.code() == 7);
        CHECK_THAT(percent.msg(),
                   Catch::Matchers::StartsWith("master \"eth%d\" is not a valid interface name: it "
                                               "contains '%', which the kernel expands as a name template"));
        CHECK(config_error(with(macvlan_config(), "master", "abcdefghijklmnop")).code() == 7);
        CHECK(config_error(with(macvlan_config(), "master", "")).code() == 7);
        CHECK(config_error(with(macvlan_config(), "master", 3)).msg() == "master must be a string, got 3");
    }
    SECTION("macvlanMode") {
        for (const char* mode : {"bridge", "private", "vepa", "passthru"})
            CHECK(parse(with(macvlan_config(), "macvlanMode", mode)).settings.get<MacvlanConf>().mode == mode);
        auto e = config_error(with(macvlan_config(), "macvlanMode", "source"));
        CHECK(e.code() == 7);
        CHECK(e.msg() ==
              "macvlanMode \"source\" is not supported: use one of \"bridge\", \"private\", "
              "\"vepa\", \"passthru\"");
    }
    SECTION("mtu") {
        CHECK(parse(with(macvlan_config(), "mtu", 1500)).settings.get<MacvlanConf>().mtu == 1500);
        CHECK(parse(with(macvlan_config(), "mtu", 0)).settings.get<MacvlanConf>().mtu == 0);
        auto text = config_error(with(macvlan_config(), "mtu", "abc"));
        CHECK(text.code() == 7);
        CHECK(text.msg() == "mtu must be a non-negative integer, got \"abc\"");
        CHECK(config_error(with(macvlan_config(), "mtu", "1500")).code() == 7);
        CHECK(config_error(with(macvlan_config(), "mtu", -1)).msg() == "mtu must be a non-negative integer, got -1");
        CHECK(config_error(with(macvlan_config(), "mtu", 1500.5)).code() == 7);
        CHECK(config_error(with(macvlan_config(), "mtu", true)).code() == 7);
        auto huge = config_error(with(macvlan_config(), "mtu", 2147483648LL));
        CHECK(huge.code() == 7);
        CHECK(huge.msg() == "mtu 2147483648 is too large: at most 2147483647");
        CHECK(config_error_text(R"({"cniVersion":"1.0.0","name":"n","mode":"macvlan","master":"m",
                                    "mtu":99999999999999999999999})")
                  .code() == 7);
    }
    SECTION("mac must be assignable") {
        CHECK(config_error(with(macvlan_config(), "mac", "zz:58:0a:01:00:05")).code() == 7);
        CHECK(config_error(with(macvlan_config(), "mac", "0a:58:0a:01:00")).code() == 7);
        CHECK(config_error(with(macvlan_config(), "mac", "0a-58-0a-01-00-05")).code() == 7);
        auto multicast = config_error(with(macvlan_config(), "mac", "01:00:5e:00:00:01"));
        CHECK(multicast.code() == 7);
        CHECK_THAT(multicast.msg(), Catch::Matchers::Contains("not multicast"));
        CHECK(config_error(with(macvlan_config(), "mac", "00:00:00:00:00:00")).code() == 7);
        CHECK(parse(with(macvlan_config(), "mac", "02:00:00:00:00:01")).settings.get<MacvlanConf>().mac ==
              "02:00:00:00:00:01");
    }
    SECTION("device plugin keys are ignored in macvlan mode, whatever they hold") {
        json j = macvlan_config();
        j["deviceID"] = "!!";
        j["pciBusID"] = 12;
        CHECK_NOTHROW(parse(j));
    }
}

TEST_CASE("config: hostdev keys", "[cni][config]") {
    auto no_selector = config_error(without(hostdev_config(), "device"));
    CHECK(no_selector.code() == 7);
    CHECK_THAT(no_selector.msg(), Catch::Matchers::StartsWith("hostdev mode needs a device"));
    CHECK(config_error(without(hostdev_config(), "device"), Command::check).code() == 7);

    CHECK(
        config_error(with(hostdev_config(), "device", "a/b")).msg() ==
        "device \"a/b\" is not a valid interface name: it contains '/' (an interface name is 1-15 bytes, not \".\" or \"..\", without '/', ':', '%', whitespace or control characters)");
    CHECK(config_error(with(hostdev_config(), "device", "net%d")).code() == 7);
    CHECK(config_error(with(hostdev_config(), "device", "abcdefghijklmnop")).code() == 7);
    CHECK(config_error(with(hostdev_config(), "hwaddr", "0a:58:0a:01:00")).code() == 7);
    CHECK(config_error(with(hostdev_config(), "hwaddr", 5)).code() == 7);

    for (const char* bad : {"sys/devices/pci0000:00", "/sys/class/net/eth0", "/sys/devices/../../etc",
                            "/sys/devices/pci0000:00/..", "/sys/devices/"}) {
        auto e = config_error(with(hostdev_config(), "kernelpath", bad));
        CHECK(e.code() == 7);
        CHECK_THAT(e.msg(), Catch::Matchers::Contains("must be an absolute path under /sys/devices/"));
    }

    for (const char* bad : {"0000:af:06.8", "af:06.0", "0000:af:06", "0000:xf:06.0", "-mlx5.sf.1", "mlx5_core",
                            "mlx5 core.sf.4", "0000:af:06.0 "}) {
        INFO(bad);
        json j = with(without(hostdev_config(), "device"), "deviceID", bad);
        auto e = config_error(j);
        CHECK(e.code() == 7);
        CHECK_THAT(e.msg(), Catch::Matchers::Contains("is neither a PCI address"));
    }
    auto rc = config_error(with(hostdev_config(), "runtimeConfig", {{"deviceID", "bogus"}}));
    CHECK_THAT(rc.msg(), Catch::Matchers::StartsWith("runtimeConfig.deviceID \"bogus\""));
    CHECK(config_error(with(hostdev_config(), "pciBusID", 12)).msg() == "pciBusID must be a string, got 12");
}

TEST_CASE("config: ipam and dns", "[cni][config]") {
    CHECK(config_error(with(macvlan_config(), "ipam", "rdmanet-ipam")).msg() ==
          "ipam must be a JSON object, got \"rdmanet-ipam\"");
    CHECK(config_error(with(macvlan_config(), "ipam", {{"type", 1}})).msg() == "ipam.type must be a string, got 1");
    for (const char* bad : {"../bin/sh", "/usr/bin/host-local", ".", ".."}) {
        auto e = config_error(with(macvlan_config(), "ipam", {{"type", bad}}));
        CHECK(e.code() == 7);
        CHECK_THAT(e.msg(), Catch::Matchers::Contains("must be the plain file name"));
    }
    CHECK(parse(with(macvlan_config(), "ipam", {{"type", "host-local"}, {"subnet", "10.0.0.0/8"}})).ipam.type ==
          "host-local");

    auto dns = config_error(with(macvlan_config(), "dns", {{"nameservers", "10.0.0.10"}}));
    CHECK(dns.code() == 7);  // 7 in a config, not the decode failure of a result
    CHECK(dns.msg() == "dns.nameservers must be a JSON list, got \"10.0.0.10\"");
    CHECK(config_error(with(macvlan_config(), "dns", "8.8.8.8")).code() == 7);
}

TEST_CASE("config: runtimeConfig and args", "[cni][config]") {
    auto rc = [](json value) { return with(macvlan_config(), "runtimeConfig", std::move(value)); };
    CHECK(config_error(rc("x")).msg() == "runtimeConfig must be a JSON object, got \"x\"");
    CHECK_THAT(config_error(rc({{"mac", "nope"}})).msg(),
               Catch::Matchers::StartsWith("runtimeConfig.mac \"nope\" is not a usable MAC address"));
    CHECK(config_error(rc({{"mac", "C2:B0:57:49:47:F1"}, {"ips", json::array({"10.0.0.1/33"})}})).code() == 7);
    auto ips = config_error(rc({{"ips", json::array({"10.0.0.1/24", "host"})}}));
    CHECK(ips.msg() == "runtimeConfig.ips entry \"host\" is not an IP address or CIDR");
    CHECK(config_error(rc({{"ips", "10.0.0.1/24"}})).msg() ==
          "runtimeConfig.ips must be a JSON list, got \"10.0.0.1/24\"");
    CHECK(config_error(rc({{"infinibandGUID", "c2:11:22:33:44:55"}})).code() == 7);
    CHECK(config_error(rc({{"CNIDeviceInfoFile", "relative/file"}})).code() == 7);
    CHECK(config_error(rc({{"CNIDeviceInfoFile", "/var/run/../../etc/passwd"}})).code() == 7);
    CHECK(config_error(rc({{"deviceID", 3}})).msg() == "runtimeConfig.deviceID must be a string, got 3");
    CHECK(parse(rc({{"mac", "C2:B0:57:49:47:F1"}})).runtime.mac == "c2:b0:57:49:47:f1");

    auto args = [](json value) { return with(macvlan_config(), "args", std::move(value)); };
    CHECK(config_error(args("x")).msg() == "args must be a JSON object, got \"x\"");
    CHECK(config_error(args({{"cni", 1}})).msg() == "args.cni must be a JSON object, got 1");
    CHECK(config_error(args({{"cni", {{"ips", json::array({"300.1.1.1"})}}}})).msg() ==
          "args.cni.ips entry \"300.1.1.1\" is not an IP address or CIDR");
    CHECK(parse(args({{"cni", {{"ips", json::array({"fd00::1/64"})}}}, {"other", 1}})).args_cni_ips ==
          Strings{"fd00::1/64"});
}

TEST_CASE("config: logging keys", "[cni][config]") {
    for (const char* level : {"trace", "debug", "info", "warn", "error", "off"})
        CHECK(parse(with(macvlan_config(), "logLevel", level)).log_level == level);
    auto e = config_error(with(macvlan_config(), "logLevel", "verbose"));
    CHECK(e.code() == 7);
    CHECK(e.msg() ==
          "logLevel \"verbose\" is not supported: use one of \"trace\", \"debug\", \"info\", "
          "\"warn\", \"error\", \"off\"");
    CHECK(config_error(with(macvlan_config(), "logFile", "rdmanet.log")).code() == 7);
    CHECK(config_error(with(macvlan_config(), "logFile", 1)).code() == 7);
}

TEST_CASE("config: prevResult", "[cni][config]") {
    json prev = json::parse(R"({"cniVersion":"1.0.0","interfaces":[{"name":"net1","sandbox":"/run/netns/x"}],
                                "ips":[{"address":"10.1.0.5/24","interface":0}]})");
    NetConf conf = parse(with(macvlan_config(), "prevResult", prev), Command::check);
    REQUIRE(conf.prev_result);
    CHECK(conf.prev_result->interfaces.at(0).sandbox == "/run/netns/x");

    auto missing = config_error(macvlan_config(), Command::check);
    CHECK(missing.code() == 7);
    CHECK_THAT(missing.msg(), Catch::Matchers::StartsWith("prevResult is required for CHECK"));
    CHECK_NOTHROW(parse(macvlan_config(), Command::add));  // the first plugin of a chain has none

    json bad = prev;
    bad["ips"][0]["address"] = "10.1.0.5";
    auto e = config_error(with(macvlan_config(), "prevResult", bad));
    CHECK(e.code() == 7);
    CHECK_THAT(e.msg(), Catch::Matchers::StartsWith("prevResult.ips[0].address \"10.1.0.5\""));
    CHECK(config_error(with(macvlan_config(), "prevResult", "x")).msg() ==
          "prevResult must be a JSON object, got \"x\"");
}

// --- GC attachments ---------------------------------------------------------------------------

TEST_CASE("config: GC valid attachments", "[cni][config]") {
    json base = with(macvlan_config(), "cniVersion", "1.1.0");
    SECTION("absent is nullopt, which is not an empty list") {
        CHECK_FALSE(parse(base, Command::gc).valid_attachments);
        auto empty = parse(with(base, "cni.dev/valid-attachments", json::array()), Command::gc).valid_attachments;
        REQUIRE(empty);
        CHECK(empty->empty());
    }
    SECTION("entries are read; the current key wins over the legacy one") {
        json j = base;
        j["cni.dev/valid-attachments"] = json::parse(R"([{"containerID":"c1","ifname":"net1"},
                                                          {"containerID":"c2","ifname":"net2","extra":1}])");
        j["cni.dev/attachments"] = json::parse(R"([{"containerID":"old","ifname":"net1"}])");
        auto list = parse(j, Command::gc).valid_attachments;
        REQUIRE(list);
        CHECK(*list == std::vector<AttachmentKey>{{"c1", "net1"}, {"c2", "net2"}});
        auto legacy = parse(without(j, "cni.dev/valid-attachments"), Command::gc).valid_attachments;
        REQUIRE(legacy);
        CHECK(*legacy == std::vector<AttachmentKey>{{"old", "net1"}});
    }
    SECTION("a malformed list fails GC rather than being guessed at") {
        CHECK(config_error(with(base, "cni.dev/valid-attachments", "c1"), Command::gc).code() == 7);
        CHECK(config_error(with(base, "cni.dev/valid-attachments", json::parse(R"([{"ifname":"net1"}])")), Command::gc)
                  .msg() == "cni.dev/valid-attachments[0].containerID is required");
        CHECK(config_error(with(base, "cni.dev/attachments", json::parse("[1]")), Command::gc).code() == 7);
    }
    SECTION("other verbs ignore a malformed list") {
        CHECK_FALSE(parse(with(base, "cni.dev/valid-attachments", "c1"), Command::del).valid_attachments);
    }
}

// --- lenient verbs ----------------------------------------------------------------------------

TEST_CASE("config: DEL, GC and STATUS are lenient beyond name and version", "[cni][config]") {
    json broken = json::parse(R"({"cniVersion":"1.1.0","name":"rdma-net","mode":"bridge","master":"a/b",
                                  "mtu":"abc","mac":"nope","macvlanMode":7,"logLevel":"loud",
                                  "runtimeConfig":{"mac":"bad","ips":["10.0.0.9/24"]},
                                  "dns":"x","prevResult":{"ips":[{"address":"bad"}]},
                                  "ipam":{"type":"rdmanet-ipam","range":"10.0.0.0/24"}})");
    for (auto command : {Command::del, Command::gc, Command::status}) {
        NetConf conf = parse(broken, command);
        CHECK(conf.name == "rdma-net");
        CHECK(conf.mode.empty());  // mode was invalid: no mode, no settings
        CHECK(conf.settings.get<MacvlanConf>().master.empty());
        CHECK(conf.settings.get<MacvlanConf>().mtu == 0);
        CHECK(conf.log_level == "info");
        CHECK_FALSE(conf.runtime.mac);
        CHECK(conf.runtime.ips == Strings{"10.0.0.9/24"});  // one bad key does not lose its neighbours
        CHECK_FALSE(conf.prev_result);
        CHECK(conf.dns.empty());
        CHECK(conf.ipam.type == "rdmanet-ipam");  // what teardown needs survives
    }
    CHECK(config_error(broken, Command::add).code() == 7);

    // A DEL config needs no mode, master or device at all.
    NetConf bare = parse(json::parse(R"({"cniVersion":"0.3.1","name":"n"})"), Command::del);
    CHECK(bare.ipam.type.empty());
    NetConf hostdev = parse(without(hostdev_config(), "device"), Command::del);
    CHECK(hostdev.mode == "hostdev");
    // A valid prevResult on DEL is read.
    CHECK(
        parse(with(macvlan_config(), "prevResult", json::parse(R"({"ips":[{"address":"10.0.0.1/8"}]})")), Command::del)
            .prev_result);
}

// --- MAC precedence and reply version ---------------------------------------------------------

TEST_CASE("config: requested MAC precedence", "[cni][config]") {
    json j = with(macvlan_config(), "mac", "02:00:00:00:00:03");
    CniArgs args = parse_cni_args("IgnoreUnknown=1;MAC=02:00:00:00:00:02");
    CHECK(parse(j).requested_mac(CniArgs{}) == "02:00:00:00:00:03");
    CHECK(parse(j).requested_mac(args) == "02:00:00:00:00:02");
    j["runtimeConfig"] = {{"mac", "02:00:00:00:00:01"}};
    CHECK(parse(j).requested_mac(args) == "02:00:00:00:00:01");
    CHECK_FALSE(parse(macvlan_config()).requested_mac(CniArgs{}));
    CHECK_FALSE(parse(hostdev_config()).requested_mac(CniArgs{}));
    CHECK(parse(macvlan_config()).requested_mac(parse_cni_args("MAC=0A:00:00:00:00:01")) == "0a:00:00:00:00:01");

    auto e = testing::expect_cni_error([&] { parse(macvlan_config()).requested_mac(parse_cni_args("MAC=xyz")); });
    CHECK(e.code() == 4);
    CHECK_THAT(e.msg(), Catch::Matchers::StartsWith("CNI_ARGS MAC=\"xyz\" is not a usable MAC address"));
}

TEST_CASE("config: reply version for VERSION and errors", "[cni][config]") {
    CHECK(reply_version(R"({"cniVersion":"0.4.0"})") == "0.4.0");
    CHECK(reply_version(R"({"cniVersion":"0.2.0"})") == "0.2.0");
    CHECK(reply_version("") == "1.1.0");
    CHECK(reply_version("not json") == "1.1.0");
    CHECK(reply_version(R"({"cniVersion":5})") == "1.1.0");
    CHECK(reply_version(R"({"cniVersion":"1.0.0\"}"})") == "1.1.0");
    CHECK(reply_version(R"([])") == "1.1.0");
    CHECK(reply_version(std::string(100000, '[')) == "1.1.0");
}
