// Chained use (prevResult merged: our interface appended, indexes shifted) and logging (the log
// file gets the decisions, stdout gets nothing but the result).
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "e2e/e2e_helpers.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

TEST_CASE("chained after another plugin, the previous result is kept and ours appended", "[e2e][chaining]") {
    Workspace ws;
    ScopedVeth uplink(nullptr, nullptr, "ch");
    ScopedNetns pod("pod");
    set_link_up(nullptr, uplink.name_a());
    auto conf = plugin_stdin("e2e-chain", "1.0.0", macvlan_plugin(uplink.name_a(), host_local(ws, "10.250.42.0/24")));
    conf["prevResult"] = {
        {"cniVersion", "1.0.0"},
        {"interfaces", json::array({{{"name", "eth0"}, {"sandbox", pod.path()}}})},
        {"ips", json::array({{{"address", "10.9.0.7/16"}, {"interface", 0}}})},
        {"routes", json::array({{{"dst", "0.0.0.0/0"}, {"gw", "10.9.0.1"}}})},
        {"dns", {{"nameservers", json::array({"10.9.0.10"})}}},
    };
    const auto id = container_id();
    const auto add = invoke_plugin(
        rdmanet_path(), {"ADD", id, pod.path(), "net1", std::nullopt, default_cni_path(), conf.dump()}, ws.env());
    INFO(add.describe());
    REQUIRE(add.ok());
    const auto& r = add.json;
    REQUIRE(r["interfaces"].size() == 2);
    CHECK(r["interfaces"][0]["name"] == "eth0");
    CHECK(r["interfaces"][1]["name"] == "net1");
    REQUIRE(r["ips"].size() == 2);
    CHECK(r["ips"][0]["address"] == "10.9.0.7/16");
    CHECK(r["ips"][0]["interface"] == 0);
    CHECK(r["ips"][1]["interface"] == 1);  // ours, shifted past the previous interfaces
    CHECK(r["routes"][0]["dst"] == "0.0.0.0/0");
    CHECK(r["dns"]["nameservers"][0] == "10.9.0.10");

    // CHECK with that final result verifies only our interface.
    auto check_conf = conf;
    check_conf["prevResult"] = r;
    const auto check =
        invoke_plugin(rdmanet_path(),
                      {"CHECK", id, pod.path(), "net1", std::nullopt, default_cni_path(), check_conf.dump()}, ws.env());
    INFO(check.describe());
    CHECK(check.ok());
    const auto del = invoke_plugin(
        rdmanet_path(), {"DEL", id, pod.path(), "net1", std::nullopt, default_cni_path(), conf.dump()}, ws.env());
    CHECK(del.ok());
}

TEST_CASE("logFile receives the decisions at logLevel, stdout holds only the result", "[e2e][logging]") {
    Workspace ws;
    ScopedVeth uplink(nullptr, nullptr, "lg");
    ScopedNetns pod("pod");
    set_link_up(nullptr, uplink.name_a());
    const std::string log = ws.path("rdmanet.log");
    auto plugin = macvlan_plugin(uplink.name_a(), host_local(ws, "10.250.43.0/24"));
    plugin["logFile"] = log;

    auto read_log = [&] {
        std::ifstream in(log);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    };
    const auto id = container_id();

    SECTION("info level: one line per decision, with network, container id and ifname") {
        plugin["logLevel"] = "info";
        const auto conf = plugin_stdin("e2e-log", "1.0.0", plugin);
        const auto add = invoke_plugin(
            rdmanet_path(), {"ADD", id, pod.path(), "net1", std::nullopt, default_cni_path(), conf.dump()}, ws.env());
        INFO(add.describe());
        REQUIRE(add.ok());
        CHECK(add.stdout_is_json());  // nothing but the result JSON
        const auto text = read_log();
        CHECK(text.find("e2e-log " + id + " net1: ADD mode macvlan") != std::string::npos);
        CHECK(text.find("created macvlan net1") != std::string::npos);
        invoke_plugin(rdmanet_path(), {"DEL", id, pod.path(), "net1", std::nullopt, default_cni_path(), conf.dump()},
                      ws.env());
        CHECK(read_log().find("DEL done") != std::string::npos);
    }
    SECTION("error level: an error is logged, info is not; the error JSON alone is on stdout") {
        plugin["logLevel"] = "error";
        plugin["master"] = "rdmt-nonexist";
        const auto conf = plugin_stdin("e2e-log", "1.0.0", plugin);
        const auto add = invoke_plugin(
            rdmanet_path(), {"ADD", id, pod.path(), "net1", std::nullopt, default_cni_path(), conf.dump()}, ws.env());
        REQUIRE_FALSE(add.ok());
        REQUIRE(add.stdout_is_json());
        CHECK(add.code() == 101);
        const auto text = read_log();
        CHECK(text.find("[error]") != std::string::npos);
        CHECK(text.find("rdmt-nonexist") != std::string::npos);
        CHECK(text.find("[info]") == std::string::npos);
    }
}
