// DEL never wedges a pod: a DEL whose configuration is invalid or refused by the node policy
// succeeds (logged and audited) when nothing is recorded for the attachment -- nothing was ever
// set up under that configuration -- and fails only when an attachment state says something
// remains, naming it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e/e2e_helpers.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

json rdmanet_conf(const std::string& name, const std::string& master, const json& ipam) {
    return plugin_stdin(name, "1.0.0", {{"type", "rdmanet"}, {"mode", "macvlan"}, {"master", master}, {"ipam", ipam}});
}

}  // namespace

TEST_CASE("DEL with a config the node policy refuses, nothing recorded: succeeds", "[e2e][del][policy]") {
    Workspace ws;
    ScopedVeth uplink{nullptr, nullptr, "du"};
    ScopedNetns pod{"pod"};
    const std::string outside = "/var/tmp/rdmanet-e2e-refused-" + container_id("d");
    const auto conf = rdmanet_conf("e2e-delref", uplink.name_a(),
                                   {{"type", "rdmanet-ipam"}, {"range", "10.250.43.0/24"}, {"data_dir", outside}});
    const std::string id = container_id();
    const auto add = direct(ws, "ADD", pod.path(), id, "net1", conf);
    INFO(add.describe());
    REQUIRE(add.code() == 7);  // refused, nothing allocated

    for (int i = 0; i < 2; ++i) {
        const auto del = direct(ws, "DEL", pod.path(), id, "net1", conf);
        INFO(del.describe());
        CHECK(del.ok());
    }
    CHECK_FALSE(std::filesystem::exists(outside));
    CHECK(read_text(ws.audit_log()).find("DEL " + id + " net1: IPAM release skipped") != std::string::npos);
}

TEST_CASE("DEL with an invalid config, nothing recorded: succeeds", "[e2e][del]") {
    Workspace ws;
    ScopedNetns pod{"pod"};
    const std::string id = container_id();
    SECTION("no network name") {
        const json conf = {{"cniVersion", "1.0.0"}, {"type", "rdmanet"}, {"mode", "macvlan"}};
        const auto del = direct(ws, "DEL", pod.path(), id, "net1", conf);
        INFO(del.describe());
        CHECK(del.ok());
    }
    SECTION("a CNI version the plugin does not speak") {
        const auto conf = plugin_stdin("e2e-delinv", "9.9.9", {{"type", "rdmanet"}, {"mode", "macvlan"}});
        const auto del = direct(ws, "DEL", pod.path(), id, "net1", conf);
        INFO(del.describe());
        CHECK(del.ok());
    }
    SECTION("not even JSON") {
        PluginRequest req{"DEL", id, pod.path(), "net1", "", default_cni_path(), "{ not json"};
        const auto del = invoke_plugin(rdmanet_path(), req, ws.env());
        INFO(del.describe());
        CHECK(del.ok());
    }
    CHECK(read_text(ws.audit_log()).find("succeeded with an unusable config") != std::string::npos);
}

TEST_CASE("DEL with an unusable config fails while an attachment is recorded, naming what remains",
          "[e2e][del][policy]") {
    Workspace ws;
    ScopedVeth uplink{nullptr, nullptr, "dr"};
    ScopedNetns pod{"pod"};
    const std::string id = container_id();
    const json good_ipam = {{"type", "rdmanet-ipam"}, {"range", "10.250.44.0/24"}, {"data_dir", ws.path("db")}};
    const auto good = rdmanet_conf("e2e-delrem", uplink.name_a(), good_ipam);
    const auto add = direct(ws, "ADD", pod.path(), id, "net1", good);
    INFO(add.describe());
    REQUIRE(add.ok());

    SECTION("IPAM refused by the node policy") {
        auto refused = good_ipam;
        refused["data_dir"] = "/var/tmp/rdmanet-e2e-refused-" + id;
        const auto del =
            direct(ws, "DEL", pod.path(), id, "net1", rdmanet_conf("e2e-delrem", uplink.name_a(), refused));
        INFO(del.describe());
        CHECK_FALSE(del.ok());
        CHECK(del.msg().find("remains") != std::string::npos);
        CHECK(del.msg().find("macvlan attachment") != std::string::npos);
        CHECK(del.msg().find("10.250.44.") != std::string::npos);
        CHECK(ws.state_files().size() == 1);
    }
    SECTION("a config that cannot be used (a CNI version the plugin does not speak)") {
        const auto bad = plugin_stdin("e2e-delrem", "9.9.9", {{"type", "rdmanet"}, {"mode", "macvlan"}});
        const auto del = direct(ws, "DEL", pod.path(), id, "net1", bad);
        INFO(del.describe());
        CHECK(del.code() == 1);
        CHECK(del.msg().find("DEL cannot undo what remains: network e2e-delrem has a recorded macvlan attachment") !=
              std::string::npos);
        CHECK(del.details().find("reconcile --local") != std::string::npos);
        CHECK(ws.state_files().size() == 1);
    }
    // The good config still undoes it.
    const auto del = direct(ws, "DEL", pod.path(), id, "net1", good);
    INFO(del.describe());
    CHECK(del.ok());
    CHECK(ws.state_files().empty());
}
