// Every file in conf/ is parsed and validated with the plugin's own parser: conflists, NADs
// (through rdmanetctl render), network specs (rendered; the converted real-world network must
// match the NADs committed next to it) and the pod examples (their network and resource requests
// must match a NAD of conf/nad). A file of no known kind fails the test, so nothing goes unchecked.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "rdmanet/cni/translate/render.hpp"

using namespace rdmanet::cni::ctl;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kConf = RDMANET_SOURCE_DIR "/conf";

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
            out[nad["metadata"]["namespace"].get<std::string>() + "/" + nad["metadata"]["name"].get<std::string>()] = nad;
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
        } else {
            FAIL("conf/" + rel + " is of no kind this test knows: add a check for it");
        }
        ++checked;
    }
    CHECK(checked >= 15);
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
