// Where an InfiniBand VF's GUID comes from: runtimeConfig.infinibandGUID > args.cni.guid >
// CNI_ARGS guid > the config's "guid". ib-sriov-cni reads the first two in that order;
// CNI_ARGS and the config key rank below, as the CNI conventions rank
// runtimeConfig > args > CNI_ARGS.
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
            {"deviceID", "0000:af:06.2"}};
}

NetConf parse(nlohmann::json extra, Command c = Command::add) {
    auto j = base();
    j.update(extra);
    return parse_net_conf(j.dump(), c);
}

const std::optional<std::string> kConfig("c2:00:00:00:00:00:00:01");
const std::optional<std::string> kCniArgs("c2:00:00:00:00:00:00:02");
const std::optional<std::string> kArgsCni("c2:00:00:00:00:00:00:04");
const std::optional<std::string> kRuntime("c2:00:00:00:00:00:00:03");

nlohmann::json args_cni(const std::string& guid) { return {{"cni", {{"guid", guid}}}}; }

}  // namespace

TEST_CASE("sriov GUID sources: args.cni.guid ranks below runtimeConfig, above CNI_ARGS and config",
          "[sriov][config][guid]") {
    const auto cni_args = parse_cni_args("IgnoreUnknown=true;guid=C2:00:00:00:00:00:00:02");

    auto conf = parse({{"guid", *kConfig}, {"args", args_cni("C2:00:00:00:00:00:00:04")}});
    CHECK(conf.settings.get<SriovConf>().args_guid == kArgsCni);  // lower-cased on the way in
    CHECK(conf.settings.get<SriovConf>().requested_guid(conf.runtime, CniArgs{}) == kArgsCni);
    CHECK(conf.settings.get<SriovConf>().requested_guid(conf.runtime, cni_args) == kArgsCni);

    conf =
        parse({{"guid", *kConfig}, {"args", args_cni(*kArgsCni)}, {"runtimeConfig", {{"infinibandGUID", *kRuntime}}}});
    CHECK(conf.settings.get<SriovConf>().requested_guid(conf.runtime, cni_args) == kRuntime);

    // Without args.cni.guid the old order holds.
    conf = parse({{"guid", *kConfig}, {"args", {{"cni", {{"ips", {"10.0.0.5/24"}}}}}}});
    CHECK_FALSE(conf.settings.get<SriovConf>().args_guid);
    CHECK(conf.settings.get<SriovConf>().requested_guid(conf.runtime, cni_args) == kCniArgs);
    CHECK(conf.settings.get<SriovConf>().requested_guid(conf.runtime, CniArgs{}) == kConfig);

    // An args.cni.guid wins even over a CNI_ARGS guid that is unusable: the runtime's
    // deprecated channel is not consulted at all then.
    const auto bad = parse_cni_args("guid=00:00:00:00:00:00:00:00");
    conf = parse({{"args", args_cni(*kArgsCni)}});
    CHECK(conf.settings.get<SriovConf>().requested_guid(conf.runtime, bad) == kArgsCni);
}

TEST_CASE("sriov GUID sources: a bad args.cni.guid is a config error naming the key", "[sriov][config][guid]") {
    REQUIRE_CNI_ERROR(parse({{"args", args_cni("00:00:00:00:00:00:00:00")}}), ErrorCode::invalid_config,
                      "args.cni.guid \"00:00:00:00:00:00:00:00\" is not a usable GUID");
    REQUIRE_CNI_ERROR(parse({{"args", args_cni("ff:ff:ff:ff:ff:ff:ff:ff")}}), ErrorCode::invalid_config,
                      "all ones are reserved");
    REQUIRE_CNI_ERROR(parse({{"args", args_cni("c2:11")}}), ErrorCode::invalid_config, "args.cni.guid");
    REQUIRE_CNI_ERROR(parse({{"args", {{"cni", {{"guid", 5}}}}}}), ErrorCode::invalid_config, "args.cni.guid must be");
    // DEL never fails on it.
    CHECK_NOTHROW(parse({{"args", args_cni("zz")}}, Command::del));
}
