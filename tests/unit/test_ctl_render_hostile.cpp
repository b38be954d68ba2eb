// rdmanetctl render against hostile CRs: JSON carried in strings nested far past the limit,
// values of the wrong type (the message names the field, never the library's own words), and a
// spec.sysctl next to a meta plugin tuning's sysctl (merged; a key with two values refused).
#include <catch2/catch.hpp>

#include <string>

#include "rdmanet/base/json_limits.hpp"
#include "rdmanet/cni/translate/render.hpp"

using namespace rdmanet::cni::translate;
using nlohmann::json;

namespace {

json macvlan_cr(json spec) {
    spec["master"] = "eth1";
    return {{"apiVersion", "mellanox.com/v1alpha1"},
            {"kind", "MacvlanNetwork"},
            {"metadata", {{"name", "n1"}}},
            {"spec", spec}};
}

json own_cr(json spec) {
    spec["mode"] = "macvlan";
    spec["master"] = "eth1";
    return {{"apiVersion", "rdmanet.dev/v1alpha1"},
            {"kind", "RdmaNetwork"},
            {"metadata", {{"name", "n1"}}},
            {"spec", spec}};
}

std::string render_error(const json& doc, RenderOptions options = {}) {
    try {
        (void)render_network(doc, options);
    } catch (const nlohmann::json::exception& e) {
        FAIL("a raw library error escaped render: " << e.what());
    } catch (const std::exception& e) {
        return e.what();
    }
    FAIL("render succeeded, an error was expected");
    return "";
}

// Options that switch the network's IPAM to rdmanet-ipam.
RenderOptions to_rdmanet_ipam() {
    RenderOptions options;
    options.ipam = "rdmanet";
    return options;
}

json config_of(const json& nad) { return json::parse(nad.at("spec").at("config").get<std::string>()); }

std::string deep(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

}  // namespace

TEST_CASE("render: JSON strings of a CR nested past the limit are refused, not a crash", "[ctl][render][hostile]") {
    // 70k levels used to overflow the stack (exit 139) in metaPlugins and ipam alike.
    const std::string nested = "{\"type\":\"tuning\",\"x\":" + deep(70000) + "}";
    CHECK_THAT(render_error(macvlan_cr({{"metaPlugins", nested}})),
               Catch::Contains("spec.metaPlugins") && Catch::Contains("nests deeper than 64"));
    CHECK_THAT(render_error(macvlan_cr({{"ipam", "{\"type\":\"whereabouts\",\"x\":" + deep(70000) + "}"}})),
               Catch::Contains("spec.ipam is not a JSON object") && Catch::Contains("nests deeper than 64"));
    CHECK_THAT(render_error(own_cr({{"metaPlugins", nested}})), Catch::Contains("nests deeper than 64"));
    const json nad = {{"apiVersion", "k8s.cni.cncf.io/v1"},
                      {"kind", "NetworkAttachmentDefinition"},
                      {"metadata", {{"name", "n1"}}},
                      {"spec", {{"config", "{\"cniVersion\":\"1.0.0\",\"x\":" + deep(70000) + "}"}}}};
    CHECK_THAT(render_error(nad), Catch::Contains("spec.config") && Catch::Contains("nests deeper than 64"));
    // Larger than the one size limit: refused before parsing.
    const std::string big = "{\"type\":\"tuning\",\"x\":\"" + std::string(rdmanet::base::kMaxJsonBytes, 'x') + "\"}";
    CHECK_THAT(render_error(macvlan_cr({{"metaPlugins", big}})), Catch::Contains("larger than the limit"));
    // At the limit, the same shape renders.
    CHECK_NOTHROW(render_network(macvlan_cr({{"metaPlugins", "{\"type\":\"bandwidth\",\"x\":" + deep(60) + "}"}}), {}));
}

TEST_CASE("render: a value of the wrong type is named by its field", "[ctl][render][hostile]") {
    CHECK(render_error(macvlan_cr({{"ipam", R"({"type": 5})"}}), to_rdmanet_ipam()) ==
          "MacvlanNetwork n1: spec.ipam.type must be a string, got 5");
    CHECK(render_error(macvlan_cr({{"networkNamespace", 7}})) ==
          "MacvlanNetwork n1: spec.networkNamespace must be a string, got 7");
    json bad_kind = macvlan_cr({});
    bad_kind["metadata"]["name"] = json::array({"n1"});
    CHECK_THAT(render_error(bad_kind), Catch::Contains("metadata.name must be a string, got [\"n1\"]"));
    // A NAD whose config names itself with a number, converted with --ipam.
    const json nad = {
        {"apiVersion", "k8s.cni.cncf.io/v1"},
        {"kind", "NetworkAttachmentDefinition"},
        {"metadata", {{"name", "n1"}}},
        {"spec", {{"config", R"({"cniVersion":"1.0.0","name":5,"type":"rdmanet","mode":"macvlan","master":"eth1"})"}}}};
    CHECK(render_error(nad, to_rdmanet_ipam()) ==
          "NetworkAttachmentDefinition n1: spec.config.name must be a string, got 5");
    CHECK_THAT(render_error(nad), Catch::Contains("name must be a string, got 5"));
    // A plugin whose type is not a string, inside a list of meta plugins that stays chained.
    CHECK_THAT(render_error(own_cr({{"ipam", {{"type", json::array()}}}})),
               Catch::Contains("must be a string, got []"));
    // Documents of a kubectl List with a numeric kind.
    CHECK_THAT(render_error(json{{"apiVersion", 1}, {"kind", "List"}}),
               Catch::Contains("apiVersion must be a string, got 1"));
}

TEST_CASE("render: spec.sysctl and a meta plugin tuning's sysctl are merged", "[ctl][render][hostile]") {
    const auto nad = render_network(
        own_cr(
            {{"sysctl", {{"net.ipv4.conf.IFNAME.arp_ignore", "1"}}},
             {"metaPlugins",
              R"({"type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.rp_filter":"0","net.ipv4.conf.IFNAME.arp_ignore":"1"}})"}}),
        {});
    const auto config = config_of(nad);
    CHECK_FALSE(config.contains("plugins"));  // tuning folded: nothing left to chain
    CHECK(config["sysctl"] ==
          json({{"net.ipv4.conf.IFNAME.arp_ignore", "1"}, {"net.ipv4.conf.IFNAME.rp_filter", "0"}}));

    CHECK(render_error(
              own_cr({{"sysctl", {{"net.ipv4.conf.IFNAME.arp_ignore", "1"}}},
                      {"metaPlugins", R"({"type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.arp_ignore":"2"}})"}})) ==
          "RdmaNetwork n1: sysctl net.ipv4.conf.IFNAME.arp_ignore is \"1\" in spec.sysctl but \"2\" in metaPlugins' "
          "tuning: set it in one place");
    // An sbr next to the network's own policyRouting stays chained, as written.
    const auto kept = config_of(render_network(
        own_cr({{"policyRouting", {{"table", 100}}}, {"metaPlugins", R"({"type":"sbr","table":101})"}}), {}));
    REQUIRE(kept.contains("plugins"));
    CHECK(kept["plugins"][0]["policyRouting"] == json({{"table", 100}}));
    CHECK(kept["plugins"][1] == json({{"type", "sbr"}, {"table", 101}}));
}
