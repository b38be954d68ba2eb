// Every file in conf/ is parsed and validated with the plugin's own parser: conflists, NADs
// (through rdmanetctl render), network specs (rendered; the converted real-world network must
// match the NADs committed next to it) and the pod examples (their network and resource requests
// must match a NAD of conf/nad), and the DRA examples of conf/dra (each object well-formed, every
// reference between them resolved, NADs and profiles validated by the plugin's parser with the
// deviceID the DRA callers inject). A file of no known kind fails the test, so nothing goes unchecked.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/node/dranet/profile.hpp"
#include "rdmanet/cni/translate/render.hpp"
#include "support/build_paths.hpp"

using namespace rdmanet::cni::translate;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kConf = rdmanet::test::source_dir() + "/conf";

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<fs::path> files_under(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

json config_of(const json& nad) { return json::parse(nad["spec"]["config"].get<std::string>()); }

// NADs of conf/nad by "<namespace>/<name>".
std::map<std::string, json> example_nads() {
    std::map<std::string, json> out;
    for (const auto& f : files_under(kConf / "nad"))
        for (const auto& nad : render_documents(slurp(f), {}))
            out[nad["metadata"]["namespace"].get<std::string>() + "/" + nad["metadata"]["name"].get<std::string>()] =
                nad;
    return out;
}

void check_conflist(const fs::path& file) {
    const auto config = json::parse(slurp(file));
    const bool device_from_runtime = config.dump().find("\"deviceID\"") != std::string::npos;
    REQUIRE_NOTHROW(validate_cni_config(config, device_from_runtime ? "0000:00:00.0" : ""));
}

void check_pod(const fs::path& file, const std::map<std::string, json>& nads) {
    const auto pod = yaml_to_json(slurp(file));
    REQUIRE(pod["kind"] == "Pod");
    const std::string ns = pod["metadata"]["namespace"];
    const std::string networks = pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"];
    REQUIRE_FALSE(networks.empty());
    const auto key = networks.find('/') == std::string::npos ? ns + "/" + networks : networks;
    INFO("pod network " + key);
    REQUIRE(nads.count(key) == 1);
    const auto resource = nads.at(key)["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"].get<std::string>();
    bool requests_resource = false, ipc_lock = false;
    for (const auto& c : pod["spec"]["containers"]) {
        requests_resource = requests_resource || (c["resources"]["requests"].value(resource, 0) == 1 &&
                                                  c["resources"]["limits"].value(resource, 0) == 1);
        for (const auto& cap : c["securityContext"]["capabilities"]["add"]) ipc_lock = ipc_lock || cap == "IPC_LOCK";
    }
    CHECK(requests_resource);
    CHECK(ipc_lock);
}

// The deviceID both DRA callers inject (the claimed function's PCI address).
const std::string kInjectedDeviceId = "0000:00:00.0";

const json& object_at(const json& j, const std::string& key) {
    INFO("key " << key);
    REQUIRE(j.contains(key));
    REQUIRE(j[key].is_object());
    return j[key];
}

const json& list_at(const json& j, const std::string& key) {
    INFO("key " << key);
    REQUIRE(j.contains(key));
    REQUIRE(j[key].is_array());
    REQUIRE_FALSE(j[key].empty());
    return j[key];
}

std::string string_at(const json& j, const std::string& key) {
    INFO("key " << key);
    REQUIRE(j.contains(key));
    REQUIRE(j[key].is_string());
    REQUIRE_FALSE(j[key].get<std::string>().empty());
    return j[key].get<std::string>();
}

// A DRANET profile (the node file the provider reads): its keys, and its ipam and policyRouting
// validated by the plugin's parser as the same keys of a CNI config.
void check_dranet_profile(const fs::path& file) {
    const auto profile = json::parse(slurp(file));
    REQUIRE(profile.is_object());
    for (const auto& [key, value] : profile.items()) {
        INFO("profile key " << key);
        CHECK((key == "ipam" || key == "network" || key == "policyRouting" || key == "sysctl" ||
               key == "whereaboutsReconciler"));
    }
    // The provider's own parser takes it, and the whereabouts-reconciler guard lets it serve claims.
    const auto parsed = rdmanet::cni::node::dranet::parse_profile(file.stem().string(), slurp(file),
                                                                  rdmanet::cni::NodePolicy{}, "node-1", true);
    CHECK_FALSE(rdmanet::cni::node::dranet::whereabouts_hazard(parsed));
    json config = {{"cniVersion", "1.0.0"},
                   {"name", profile.value("network", "profile")},
                   {"type", "rdmanet"},
                   {"mode", "hostdev"},
                   {"ipam", object_at(profile, "ipam")}};
    if (profile.contains("policyRouting")) config["policyRouting"] = profile["policyRouting"];
    REQUIRE_NOTHROW(validate_cni_config(config, kInjectedDeviceId));
}

// One way of conf/dra: DeviceClasses, ResourceClaimTemplates, NADs, a Pod, and the driver's own
// objects. Every reference resolves inside the file: a request's deviceClassName, the pod's
// claim templates and container claims, a VfConfig's NAD, the Multus networks annotation (whose
// NAD carries the resourceName its DeviceClass selects on).
void check_dra_manifests(const fs::path& file) {
    std::map<std::string, std::map<std::string, json>> by_kind;  // kind -> name -> object
    for (const auto& doc : yaml_documents_to_json(slurp(file))) {
        REQUIRE(doc.is_object());
        const std::string kind = string_at(doc, "kind");
        string_at(doc, "apiVersion");
        by_kind[kind][string_at(object_at(doc, "metadata"), "name")] = doc;
    }
    REQUIRE(by_kind["DeviceClass"].size() >= 1);
    REQUIRE(by_kind["ResourceClaimTemplate"].size() >= 1);
    REQUIRE(by_kind["Pod"].size() == 1);

    for (const auto& [name, dc] : by_kind["DeviceClass"]) {
        CHECK(dc["apiVersion"] == "resource.k8s.io/v1");
        for (const auto& sel : list_at(object_at(dc, "spec"), "selectors"))
            CHECK(string_at(object_at(sel, "cel"), "expression").find("device.driver ==") != std::string::npos);
    }
    for (const auto& [name, nad] : by_kind["NetworkAttachmentDefinition"]) {
        INFO("NAD " << name);
        const auto config = json::parse(string_at(object_at(nad, "spec"), "config"));
        REQUIRE_NOTHROW(validate_cni_config(config, kInjectedDeviceId));
    }
    for (const auto& [name, rct] : by_kind["ResourceClaimTemplate"]) {
        INFO("ResourceClaimTemplate " << name);
        CHECK(rct["apiVersion"] == "resource.k8s.io/v1");
        const auto& devices = object_at(object_at(object_at(rct, "spec"), "spec"), "devices");
        for (const auto& req : list_at(devices, "requests"))
            CHECK(by_kind["DeviceClass"].count(string_at(object_at(req, "exactly"), "deviceClassName")) == 1);
        for (const auto& cfg : devices.value("config", json::array())) {
            const auto& params = object_at(object_at(cfg, "opaque"), "parameters");
            if (params.value("kind", "") == "VfConfig") {
                CHECK(by_kind["NetworkAttachmentDefinition"].count(string_at(params, "netAttachDefName")) == 1);
                CHECK_FALSE(string_at(params, "ifName").empty());
            } else {
                // DRANET: the profile is a node file of conf/dra.
                CHECK(fs::exists(kConf / "dra" / ("dranet-profile-" + string_at(params, "profile") + ".json")));
            }
        }
    }
    const json& pod = by_kind["Pod"].begin()->second;
    std::set<std::string> pod_claims;
    for (const auto& claim : list_at(object_at(pod, "spec"), "resourceClaims")) {
        CHECK(by_kind["ResourceClaimTemplate"].count(string_at(claim, "resourceClaimTemplateName")) == 1);
        pod_claims.insert(string_at(claim, "name"));
    }
    bool uses_claim = false, ipc_lock = false;
    for (const auto& c : list_at(pod["spec"], "containers")) {
        for (const auto& claim : c["resources"].value("claims", json::array())) {
            CHECK(pod_claims.count(string_at(claim, "name")) == 1);
            uses_claim = true;
        }
        for (const auto& cap : c["securityContext"]["capabilities"]["add"]) ipc_lock = ipc_lock || cap == "IPC_LOCK";
    }
    CHECK(uses_claim);
    CHECK(ipc_lock);
    const auto annotations = pod["metadata"].value("annotations", json::object());
    if (annotations.contains("k8s.v1.cni.cncf.io/networks")) {
        const std::string network = annotations["k8s.v1.cni.cncf.io/networks"];
        REQUIRE(by_kind["NetworkAttachmentDefinition"].count(network) == 1);
        const std::string resource = by_kind["NetworkAttachmentDefinition"][network]["metadata"]["annotations"]
                                            ["k8s.v1.cni.cncf.io/resourceName"];
        bool selected = false;
        for (const auto& [name, dc] : by_kind["DeviceClass"])
            for (const auto& sel : dc["spec"]["selectors"])
                selected =
                    selected || sel["cel"].value("expression", "").find("resourceName == \"" + resource + "\"") !=
                                    std::string::npos;
        CHECK(selected);
    }
}

}  // namespace

TEST_CASE("conf: every example validates with the plugin's parser", "[conf]") {
    const auto nads = example_nads();
    std::size_t checked = 0;
    for (const auto& file : files_under(kConf)) {
        const auto rel = fs::relative(file, kConf).string();
        const auto ext = file.extension().string();
        INFO(rel);
        if (rel.find('/') == std::string::npos && (ext == ".conflist" || ext == ".conf" || ext == ".json")) {
            check_conflist(file);
        } else if (rel.rfind("nad/", 0) == 0 || rel.rfind("networks/", 0) == 0) {
            std::vector<json> rendered;
            REQUIRE_NOTHROW(rendered = render_documents(slurp(file), {}));
            CHECK_FALSE(rendered.empty());
        } else if (rel.rfind("pods/", 0) == 0) {
            check_pod(file, nads);
        } else if (rel.rfind("dra/", 0) == 0 && ext == ".yaml") {
            check_dra_manifests(file);
        } else if (rel.rfind("dra/", 0) == 0 && ext == ".json") {
            check_dranet_profile(file);
        } else {
            FAIL("conf/" + rel + " is of no kind this test knows: add a check for it");
        }
        ++checked;
    }
    CHECK(checked >= 15);
}

TEST_CASE("conf: the three DRA ways each have their manifests", "[conf]") {
    for (const char* name : {"dranet-rdmanet.yaml", "dranet-profile-rail0.json", "sriov-standalone-rdmanet.yaml",
                             "multus-dra-rdmanet.yaml"})
        CHECK(fs::exists(kConf / "dra" / name));
}

TEST_CASE("conf: the converted real-world network matches the committed NADs", "[conf]") {
    const auto spec = slurp(kConf / "networks/hostdevice-net.yaml");
    const auto kept = render_documents(spec, {});
    RenderOptions to_rdmanet;
    to_rdmanet.ipam = "rdmanet";
    const auto converted = render_documents(spec, to_rdmanet);
    const auto committed_kept = yaml_to_json(slurp(kConf / "nad/hostdevice-net.yaml"));
    const auto committed_converted = yaml_to_json(slurp(kConf / "nad/hostdevice-net-rdmanet-ipam.yaml"));
    CHECK(kept.at(0)["metadata"] == committed_kept["metadata"]);
    CHECK(config_of(kept.at(0)) == config_of(committed_kept));
    CHECK(converted.at(0)["metadata"] == committed_converted["metadata"]);
    CHECK(config_of(converted.at(0)) == config_of(committed_converted));

    // The values, as the NAD carries them.
    const auto config = config_of(committed_kept);
    CHECK(committed_kept["metadata"]["namespace"] == "crater-workspace");
    CHECK(committed_kept["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == "nvidia.com/hostdev");
    CHECK(config["ipam"]["type"] == "whereabouts");
    CHECK(config["ipam"]["datastore"] == "kubernetes");
    CHECK(config["ipam"]["kubernetes"]["kubeconfig"] == "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig");
    CHECK(config["ipam"]["range"] == "192.168.10.152/27");
    CHECK(config["ipam"]["exclude"] == json({"192.168.10.151/32"}));
    CHECK(config["ipam"]["log_file"] == "/var/log/whereabouts.log");
    CHECK(config["ipam"]["log_level"] == "info");
}

TEST_CASE("conf: there is a NAD for every mode", "[conf]") {
    std::set<std::string> modes;
    for (const auto& [key, nad] : example_nads()) {
        auto config = config_of(nad);
        if (config.contains("plugins")) config = config["plugins"][0];
        modes.insert(config.value("mode", ""));
    }
    for (const char* mode : {"macvlan", "hostdev", "sriov", "ipoib"}) CHECK(modes.count(mode) == 1);
}
