// The "rdma" object, mode "ipoib" keys, and the isolation decision (a pure function).
#include <catch2/catch.hpp>

#include "rdmanet/cni/modes/net_conf.hpp"
#include "rdmanet/cni/modes/ipoib/mode.hpp"
#include "cni_test_helpers.hpp"
#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"
#include "rdmanet/netns/rdma_cm_configfs.hpp"

using namespace rdmanet::cni;
using rdmanet::netns::RdmaNetnsMode;
using nlohmann::json;

namespace {

json hostdev(json extra = json::object()) {
    json j = json::parse(R"({"cniVersion":"1.0.0","name":"rdma-net","type":"rdmanet","mode":"hostdev",
                             "device":"ens2f0"})");
    j.update(extra);
    return j;
}

json ipoib(json extra = json::object()) {
    json j = json::parse(R"({"cniVersion":"1.0.0","name":"ib-net","type":"rdmanet","mode":"ipoib",
                             "master":"ib0","ipam":{}})");
    j.update(extra);
    return j;
}

NetConf parse(const json& j, Command c = Command::add) { return parse_net_conf(j.dump(), c); }

}  // namespace

TEST_CASE("rdma.isolation defaults to auto and accepts auto|required|off", "[rdma][config][unit]") {
    CHECK(parse(hostdev()).rdma.isolation == RdmaIsolation::auto_);
    CHECK(parse(hostdev({{"rdma", {{"isolation", "required"}}}})).rdma.isolation == RdmaIsolation::required);
    CHECK(parse(hostdev({{"rdma", {{"isolation", "off"}}}})).rdma.isolation == RdmaIsolation::off);
    CHECK(parse(hostdev({{"rdma", {{"isolation", "auto"}}}})).rdma.isolation == RdmaIsolation::auto_);
    CHECK(parse(hostdev({{"rdma", json::object()}})).rdma.isolation == RdmaIsolation::auto_);
}

TEST_CASE("rdma.tos: absent by default, 0-255", "[rdma][config][unit][tos]") {
    CHECK_FALSE(parse(hostdev()).rdma.tos);
    CHECK(parse(hostdev({{"rdma", {{"tos", 106}}}})).rdma.tos == 106);
    CHECK(parse(hostdev({{"rdma", {{"tos", 0}, {"isolation", "required"}}}})).rdma.tos == 0);
    REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", {{"tos", 256}}}})), ErrorCode::invalid_config, "rdma.tos");
    REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", {{"tos", -1}}}})), ErrorCode::invalid_config, "rdma.tos");
    REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", {{"tos", "106"}}}})), ErrorCode::invalid_config, "rdma.tos");
}

TEST_CASE("rdma_cm configfs: device names must be one path component", "[rdma][unit][tos]") {
    const rdmanet::netns::RdmaCmConfigfs configfs("/nonexistent-configfs");
    CHECK_FALSE(configfs.available());
    for (const char* bad : {"", ".", "..", "../x", "a/b"})
        CHECK_THROWS_AS(configfs.set_default_roce_tos(bad, 1), std::invalid_argument);
    CHECK_FALSE(configfs.default_roce_tos("mlx5_0", 1));
}

TEST_CASE("bad rdma sections are config errors naming the key", "[rdma][config][unit]") {
    REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", {{"isolation", "exclusive"}}}})), ErrorCode::invalid_config,
                      "rdma.isolation");
    REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", {{"isolation", "exclusive"}}}})), ErrorCode::invalid_config,
                      "\"required\"");
    REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", "required"}})), ErrorCode::invalid_config, "rdma");
    REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", {{"isolation", true}}}})), ErrorCode::invalid_config, "rdma.isolation");
    // DEL is lenient: a bad section keeps the default so teardown still works.
    CHECK(parse(hostdev({{"rdma", {{"isolation", "bogus"}}}}), Command::del).rdma.isolation == RdmaIsolation::auto_);
}

TEST_CASE("mode ipoib: master, pkey, ipoibMode, mtu", "[ipoib][config][unit]") {
    const auto conf = parse(ipoib());
    CHECK(conf.mode == "ipoib");
    CHECK(conf.settings.get<IpoibConf>().master == "ib0");
    CHECK_FALSE(conf.settings.get<IpoibConf>().pkey);
    CHECK_FALSE(conf.settings.get<IpoibConf>().mode);
    CHECK(conf.settings.get<IpoibConf>().mtu == 0);

    CHECK(parse(ipoib({{"pkey", "0x8001"}})).settings.get<IpoibConf>().pkey == 0x8001u);
    CHECK(parse(ipoib({{"pkey", "0X7FFF"}})).settings.get<IpoibConf>().pkey == 0x7fffu);
    CHECK(parse(ipoib({{"pkey", 32769}})).settings.get<IpoibConf>().pkey == 0x8001u);
    CHECK(parse(ipoib({{"pkey", "12"}})).settings.get<IpoibConf>().pkey == 12u);
    CHECK(parse(ipoib({{"ipoibMode", "connected"}})).settings.get<IpoibConf>().mode ==
          std::optional<std::string>("connected"));
    CHECK(parse(ipoib({{"mtu", 2044}})).settings.get<IpoibConf>().mtu == 2044u);
}

TEST_CASE("mode ipoib: bad keys are config errors", "[ipoib][config][unit]") {
    REQUIRE_CNI_ERROR(parse(ipoib({{"master", nullptr}})), ErrorCode::invalid_config, "master");
    REQUIRE_CNI_ERROR(parse(ipoib({{"master", "ib0/x"}})), ErrorCode::invalid_config, "master");
    REQUIRE_CNI_ERROR(parse(ipoib({{"pkey", "0x8000"}})), ErrorCode::invalid_config, "pkey");
    REQUIRE_CNI_ERROR(parse(ipoib({{"pkey", 0}})), ErrorCode::invalid_config, "pkey");
    REQUIRE_CNI_ERROR(parse(ipoib({{"pkey", "0x10000"}})), ErrorCode::invalid_config, "pkey");
    REQUIRE_CNI_ERROR(parse(ipoib({{"pkey", "ffff"}})), ErrorCode::invalid_config, "partition key");
    REQUIRE_CNI_ERROR(parse(ipoib({{"pkey", -1}})), ErrorCode::invalid_config, "pkey");
    REQUIRE_CNI_ERROR(parse(ipoib({{"ipoibMode", "UD"}})), ErrorCode::invalid_config, "ipoibMode");
    REQUIRE_CNI_ERROR(parse(ipoib({{"mtu", "2044"}})), ErrorCode::invalid_config, "mtu");
    // DEL needs no master.
    CHECK(parse(ipoib({{"master", nullptr}}), Command::del).mode == "ipoib");
}

TEST_CASE("isolation decision for whole functions", "[rdma][isolation][unit]") {
    RdmaFacts f;
    f.subject = "device 0000:af:00.2";
    f.devices = {"mlx5_3"};

    SECTION("off never acts") {
        f.policy = RdmaIsolation::off;
        f.mode = RdmaNetnsMode::exclusive;
        CHECK(decide_rdma_isolation(f).step == RdmaStep::nothing);
    }
    SECTION("exclusive moves with auto and required") {
        f.mode = RdmaNetnsMode::exclusive;
        for (auto policy : {RdmaIsolation::auto_, RdmaIsolation::required}) {
            f.policy = policy;
            const auto d = decide_rdma_isolation(f);
            CHECK(d.step == RdmaStep::move);
            CHECK(d.device == "mlx5_3");
        }
    }
    SECTION("shared: auto leaves it, required fails with the boot-time fix") {
        f.mode = RdmaNetnsMode::shared;
        f.policy = RdmaIsolation::auto_;
        CHECK(decide_rdma_isolation(f).step == RdmaStep::nothing);
        CHECK_FALSE(decide_rdma_isolation(f).warn);
        f.policy = RdmaIsolation::required;
        const auto d = decide_rdma_isolation(f);
        CHECK(d.step == RdmaStep::fail);
        CHECK_THAT(d.message, Catch::Contains("shared"));
        CHECK_THAT(d.message, Catch::Contains("mlx5_3"));
        CHECK_THAT(d.hint, Catch::Contains("netns_mode=0"));
    }
    SECTION("no RDMA netns support: auto warns, required fails") {
        f.mode.reset();
        f.policy = RdmaIsolation::auto_;
        CHECK(decide_rdma_isolation(f).step == RdmaStep::nothing);
        CHECK(decide_rdma_isolation(f).warn);
        f.policy = RdmaIsolation::required;
        CHECK(decide_rdma_isolation(f).step == RdmaStep::fail);
    }
    SECTION("no RDMA device: auto is silent, required fails naming the device") {
        f.devices.clear();
        f.mode = RdmaNetnsMode::exclusive;
        CHECK(decide_rdma_isolation(f).step == RdmaStep::nothing);
        f.policy = RdmaIsolation::required;
        const auto d = decide_rdma_isolation(f);
        CHECK(d.step == RdmaStep::fail);
        CHECK_THAT(d.message, Catch::Contains("0000:af:00.2 has no RDMA device"));
    }
    SECTION("a software device bound to the netdev (rxe): required refuses, auto warns, nothing moves") {
        f.devices = {"rxe0"};
        f.bound_to_netdev = true;
        f.netdev = "veth7";
        for (auto mode : {RdmaNetnsMode::exclusive, RdmaNetnsMode::shared}) {
            f.mode = mode;
            f.policy = RdmaIsolation::auto_;
            CHECK(decide_rdma_isolation(f).step == RdmaStep::nothing);
            CHECK(decide_rdma_isolation(f).warn);
            CHECK_THAT(decide_rdma_isolation(f).message, Catch::Contains("deletes it when veth7"));
        }
        // Shared mode refuses `required` for the mode already (the first thing to fix).
        f.mode = RdmaNetnsMode::exclusive;
        f.policy = RdmaIsolation::required;
        const auto d = decide_rdma_isolation(f);
        CHECK(d.step == RdmaStep::fail);
        CHECK_THAT(d.message, Catch::Contains("rxe0"));
        CHECK_THAT(d.message, Catch::Contains("the host would lose it"));
    }
    SECTION("several RDMA devices: never guessed") {
        f.devices = {"mlx5_3", "mlx5_4"};
        f.mode = RdmaNetnsMode::exclusive;
        CHECK(decide_rdma_isolation(f).step == RdmaStep::nothing);
        CHECK(decide_rdma_isolation(f).warn);
        f.policy = RdmaIsolation::required;
        CHECK(decide_rdma_isolation(f).step == RdmaStep::fail);
    }
}

TEST_CASE("isolation decision for macvlan/ipoib children", "[rdma][isolation][unit]") {
    RdmaFacts f;
    f.child = true;
    f.subject = "master ib0";
    f.devices = {"mlx5_0"};
    f.mode = RdmaNetnsMode::exclusive;
    SECTION("exclusive + auto: a warning, nothing moved") {
        const auto d = decide_rdma_isolation(f);
        CHECK(d.step == RdmaStep::nothing);
        CHECK(d.warn);
        CHECK_THAT(d.message, Catch::Contains("cannot be shared"));
    }
    SECTION("required always fails, in either mode") {
        f.policy = RdmaIsolation::required;
        CHECK(decide_rdma_isolation(f).step == RdmaStep::fail);
        f.mode = RdmaNetnsMode::shared;
        const auto d = decide_rdma_isolation(f);
        CHECK(d.step == RdmaStep::fail);
        CHECK_THAT(d.hint, Catch::Contains("hostdev"));
    }
    SECTION("shared + auto: quiet") {
        f.mode = RdmaNetnsMode::shared;
        CHECK(decide_rdma_isolation(f).step == RdmaStep::nothing);
        CHECK_FALSE(decide_rdma_isolation(f).warn);
    }
    SECTION("never a move") {
        for (auto policy : {RdmaIsolation::auto_, RdmaIsolation::required, RdmaIsolation::off})
            for (auto mode : {RdmaNetnsMode::shared, RdmaNetnsMode::exclusive}) {
                f.policy = policy;
                f.mode = mode;
                CHECK(decide_rdma_isolation(f).step != RdmaStep::move);
            }
    }
}
