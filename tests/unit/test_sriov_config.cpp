// mode "sriov" configuration: keys, precedence and the per-key errors (code 7) sriov-cni /
// ib-sriov-cni would give, in our wording.
#include <catch2/catch.hpp>

#include "rdmanet/cni/modes/net_conf.hpp"
#include "rdmanet/cni/modes/sriov/mode.hpp"
#include "cni_test_helpers.hpp"
#include "rdmanet/cni/protocol/args.hpp"
#include "rdmanet/cni/config/config.hpp"

using namespace rdmanet::cni;

namespace {

nlohmann::json base() {
    return {{"cniVersion", "1.1.0"},
            {"name", "sriov-net"},
            {"type", "rdmanet"},
            {"mode", "sriov"},
            {"deviceID", "0000:AF:06.2"}};
}

NetConf parse(const nlohmann::json& j, Command c = Command::add) { return parse_net_conf(j.dump(), c); }

nlohmann::json with(nlohmann::json j, const nlohmann::json& extra) {
    j.update(extra);
    return j;
}

}  // namespace

TEST_CASE("sriov config: every key parsed", "[sriov][config]") {
    const auto conf = parse(with(base(), {{"mac", "0A:58:0a:01:00:05"},
                                          {"vlan", 100},
                                          {"vlanQoS", 3},
                                          {"vlanProto", "802.1AD"},
                                          {"spoofchk", "off"},
                                          {"trust", "on"},
                                          {"link_state", "enable"},
                                          {"min_tx_rate", 100},
                                          {"max_tx_rate", 1000},
                                          {"guid", "C2:11:22:33:44:55:66:77"},
                                          {"pkey", "0x8001"},
                                          {"mtu", 9000}}));
    CHECK(conf.mode == "sriov");
    const auto& s = conf.settings.get<SriovConf>();
    CHECK(s.pci_address == "0000:af:06.2");
    CHECK(s.mac == std::optional<std::string>("0a:58:0a:01:00:05"));
    CHECK(s.vlan == 100);
    CHECK(s.vlan_qos == 3);
    CHECK(s.vlan_proto == "802.1ad");
    CHECK(s.vlan_set);
    CHECK(s.spoofchk == std::optional<bool>(false));
    CHECK(s.trust == std::optional<bool>(true));
    CHECK(s.link_state == std::optional<std::string>("enable"));
    CHECK(s.min_tx_rate == std::optional<unsigned>(100));
    CHECK(s.max_tx_rate == std::optional<unsigned>(1000));
    CHECK(s.guid == std::optional<std::string>("c2:11:22:33:44:55:66:77"));
    CHECK(s.pkey == std::optional<unsigned>(0x8001));
    CHECK(s.mtu == 9000);
    CHECK(conf.requested_mac(CniArgs{}) == s.mac);
}

TEST_CASE("sriov config: defaults leave the VF alone except the VLAN", "[sriov][config]") {
    const auto s = parse(base()).settings.get<SriovConf>();
    CHECK_FALSE(s.vlan_set);
    CHECK(s.vlan == 0);
    CHECK_FALSE(s.mac);
    CHECK_FALSE(s.spoofchk);
    CHECK_FALSE(s.trust);
    CHECK_FALSE(s.link_state);
    CHECK_FALSE(s.min_tx_rate);
    CHECK_FALSE(s.guid);
    CHECK(s.mtu == 0);
}

TEST_CASE("sriov config: deviceID precedence and shapes", "[sriov][config]") {
    SECTION("runtimeConfig.deviceID wins over deviceID and pciBusID") {
        auto j = with(base(), {{"pciBusID", "0000:af:06.3"}, {"runtimeConfig", {{"deviceID", "0000:af:06.4"}}}});
        CHECK(parse(j).settings.get<SriovConf>().pci_address == "0000:af:06.4");
    }
    SECTION("pciBusID alone") {
        auto j = base();
        j.erase("deviceID");
        j["pciBusID"] = "0000:af:06.3";
        CHECK(parse(j).settings.get<SriovConf>().pci_address == "0000:af:06.3");
    }
    SECTION("a device plugin index is no device; with nothing else it is missing") {
        auto j = with(base(), {{"deviceID", "3"}});
        REQUIRE_CNI_ERROR(parse(j), ErrorCode::invalid_config, "deviceID is required in sriov mode");
    }
    SECTION("malformed") {
        REQUIRE_CNI_ERROR(parse(with(base(), {{"deviceID", "0000:af:06"}})), ErrorCode::invalid_config,
                          "deviceID \"0000:af:06\" is not a PCI address");
        REQUIRE_CNI_ERROR(parse(with(base(), {{"deviceID", "../../etc"}})), ErrorCode::invalid_config,
                          "is not a PCI address");
    }
    SECTION("an SF (auxiliary device) is not a VF") {
        auto e = testing::expect_cni_error([&] { parse(with(base(), {{"deviceID", "mlx5_core.sf.4"}})); });
        CHECK(e.code() == 7);
        CHECK_THAT(e.details(), Catch::Matchers::Contains("hostdev"));
    }
    SECTION("DEL does not need a device") {
        auto j = base();
        j.erase("deviceID");
        CHECK(parse(j, Command::del).mode == "sriov");
    }
}

TEST_CASE("sriov config: invalid values name their key (code 7)", "[sriov][config]") {
    struct Case {
        nlohmann::json extra;
        std::string fragment;
    };
    const std::vector<Case> cases = {
        {{{"vlan", 4095}}, "vlan 4095 is out of range"},
        {{{"vlan", -1}}, "vlan must be a non-negative integer"},
        {{{"vlan", "100"}}, "vlan must be"},
        {{{"vlanQoS", 8}, {"vlan", 10}}, "vlanQoS 8 is out of range"},
        {{{"vlanQoS", 1}}, "vlanQoS needs a non-zero \"vlan\""},
        {{{"vlanProto", "802.1x"}, {"vlan", 10}}, "vlanProto \"802.1x\" is not supported"},
        {{{"vlanProto", "802.1ad"}}, "vlanProto \"802.1ad\" needs a non-zero"},
        {{{"spoofchk", "yes"}}, "spoofchk \"yes\" is not supported"},
        {{{"trust", true}}, "trust must be"},
        {{{"link_state", "up"}}, "link_state \"up\" is not supported"},
        {{{"min_tx_rate", 200}, {"max_tx_rate", 100}}, "min_tx_rate 200 is above max_tx_rate 100"},
        {{{"max_tx_rate", -5}}, "max_tx_rate must be a non-negative integer"},
        {{{"mac", "01:00:5e:00:00:01"}}, "mac \"01:00:5e:00:00:01\" is not a usable MAC"},
        {{{"guid", "00:00:00:00:00:00:00:00"}}, "guid \"00:00:00:00:00:00:00:00\" is not a usable GUID"},
        {{{"guid", "ff:ff:ff:ff:ff:ff:ff:ff"}}, "all ones are reserved"},
        {{{"guid", "c2:11:22:33:44:55:66"}}, "is not a GUID"},
        {{{"runtimeConfig", {{"infinibandGUID", "00:00:00:00:00:00:00:00"}}}}, "runtimeConfig.infinibandGUID"},
        {{{"pkey", "0x10000"}}, "pkey must be a 16-bit"},
        {{{"pkey", "0x8000"}}, "pkey must be a 16-bit"},
        {{{"pkey", "zz"}}, "pkey must be"},
        {{{"mtu", 50}}, "mtu 50 is out of range"},
    };
    for (const auto& c : cases) {
        INFO(c.extra.dump());
        REQUIRE_CNI_ERROR(parse(with(base(), c.extra)), ErrorCode::invalid_config, c.fragment);
    }
    // min above max is fine when max is 0 (no limit).
    CHECK(parse(with(base(), {{"min_tx_rate", 200}, {"max_tx_rate", 0}})).settings.get<SriovConf>().min_tx_rate ==
          200u);
    // The same bad keys do not stop a DEL.
    CHECK_NOTHROW(parse(with(base(), {{"vlan", 5000}, {"pkey", "x"}}), Command::del));
}

TEST_CASE("sriov config: GUID precedence runtimeConfig > CNI_ARGS guid > config", "[sriov][config]") {
    auto conf = parse(with(base(), {{"guid", "c2:00:00:00:00:00:00:01"}}));
    CHECK(conf.settings.get<SriovConf>().requested_guid(conf.runtime, CniArgs{}) ==
          std::optional<std::string>("c2:00:00:00:00:00:00:01"));
    const auto args = parse_cni_args("IgnoreUnknown=true;guid=C2:00:00:00:00:00:00:02");
    CHECK(conf.settings.get<SriovConf>().requested_guid(conf.runtime, args) ==
          std::optional<std::string>("c2:00:00:00:00:00:00:02"));
    conf = parse(with(base(), {{"guid", "c2:00:00:00:00:00:00:01"},
                               {"runtimeConfig", {{"infinibandGUID", "c2:00:00:00:00:00:00:03"}}}}));
    CHECK(conf.settings.get<SriovConf>().requested_guid(conf.runtime, args) ==
          std::optional<std::string>("c2:00:00:00:00:00:00:03"));
    const auto bad = parse_cni_args("guid=00:00:00:00:00:00:00:00");
    conf = parse(base());
    REQUIRE_CNI_ERROR(conf.settings.get<SriovConf>().requested_guid(conf.runtime, bad), ErrorCode::invalid_environment,
                      "CNI_ARGS guid");
}
