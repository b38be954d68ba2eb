// The chart's test helpers: see chart_render.hpp.
#include "chart_render.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <catch2/catch.hpp>

#include "rdmanet/cni/translate/render.hpp"
#include "support/peers.hpp"
#include "support/process.hpp"
#include "support/skip.hpp"
#include "support/build_paths.hpp"

namespace rdmanet::test::chart {

namespace fs = std::filesystem;

namespace {

std::vector<json> documents(const std::string& yaml) {
    std::vector<json> out;
    for (auto& doc : cni::translate::yaml_documents_to_json(yaml))
        if (doc.is_object() && !doc.empty()) out.push_back(std::move(doc));  // helm prints empty ones
    return out;
}

// Helm's cache, config and data directories: one private set for the test program, removed at
// exit (and before a skip, which ends the program without destructors), so that no helm run reads
// or writes the user's.
struct HelmHome {
    std::string dir;
    ~HelmHome() { remove(); }
    void remove() {
        std::error_code ec;
        if (!dir.empty()) fs::remove_all(dir, ec);
        dir.clear();
    }
};
HelmHome helm_home_dir;

const std::string& helm_home() {
    if (helm_home_dir.dir.empty()) {
        std::string tmpl = (fs::temp_directory_path() / "rdmanet-helm-home-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        helm_home_dir.dir = tmpl;
    }
    return helm_home_dir.dir;
}

}  // namespace

void missing_peer(const std::string& why) {
    if (running_under_ci()) FAIL(why + "; CI runs every peer's tests");
    helm_home_dir.remove();
    skip_test(why);
}

std::string peer_binary(const std::string& peer, const std::string& name) {
    const auto dir = find_peer(peer);
    if (!dir) {
        missing_peer("the real peer '" + peer + "' is missing: " + peer_env_name(peer) +
                     " is not set (build it with tests/peers/build_peers.sh " + peer +
                     ", then `. tests/peers/peer_env.sh`)");
    }
    const std::string path = *dir + "/" + name;
    // A variable naming a folder without the binary is a broken setup: a failure everywhere.
    if (::access(path.c_str(), X_OK) != 0) FAIL(peer_env_name(peer) + "=" + *dir + " has no executable " + name);
    return path;
}

Run helm(const std::vector<std::string>& args) {
    std::vector<std::string> argv{peer_binary("helm", "helm")};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto& home = helm_home();
    auto r = run_process(argv,
                         {{"HELM_CACHE_HOME", home + "/cache"},
                          {"HELM_CONFIG_HOME", home + "/config"},
                          {"HELM_DATA_HOME", home + "/data"}},
                         "", std::chrono::seconds(180));
    INFO("helm timed out");
    CHECK_FALSE(r.timed_out);
    return {r.exit_code, r.out, r.err};
}

std::vector<json> render(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"template", "rdmanet", kChartDir, "--include-crds"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = helm(argv);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return documents(r.out);
}

std::vector<json> render_values(const std::string& name, const std::vector<std::string>& args) {
    std::vector<std::string> argv{"-f", kValuesDir + "/" + name + ".yaml"};
    argv.insert(argv.end(), args.begin(), args.end());
    return render(argv);
}

std::vector<json> kustomize_base() {
    const auto kustomize = peer_binary("kustomize", "kustomize");
    const auto r =
        run_process({kustomize, "build", rdmanet::test::source_dir() + "/deploy"}, {}, "", std::chrono::seconds(180));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return documents(r.out);
}

json without_helm_labels(json object) {
    auto& metadata = object["metadata"];
    if (metadata.contains("labels")) {
        auto& labels = metadata["labels"];
        for (const char* helm_label : {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
                                       "app.kubernetes.io/version"})
            labels.erase(helm_label);
        if (labels.empty()) metadata.erase("labels");
    }
    return object;
}

std::string key_of(const json& object) {
    const auto& metadata = object.at("metadata");
    return object.value("kind", "?") + " " + metadata.value("namespace", "") + "/" + metadata.value("name", "?");
}

const json* find(const std::vector<json>& objects, const std::string& kind, const std::string& name) {
    for (const auto& o : objects)
        if (o.value("kind", "") == kind && o.at("metadata").value("name", "") == name) return &o;
    return nullptr;
}

const json& one(const std::vector<json>& objects, const std::string& kind, const std::string& name) {
    const json* o = find(objects, kind, name);
    if (!o) FAIL("no " + kind + " " + name + " in the render");
    return *o;
}

const json& pod_spec(const json& workload) {
    if (workload.value("kind", "") == "CronJob")
        return workload.at("spec").at("jobTemplate").at("spec").at("template").at("spec");
    return workload.at("spec").at("template").at("spec");
}

const json* container(const json& pod, const std::string& name) {
    for (const char* list : {"initContainers", "containers"})
        if (pod.contains(list))
            for (const auto& c : pod.at(list))
                if (c.value("name", "") == name) return &c;
    return nullptr;
}

std::string arg_value(const json& container, const std::string& flag) {
    for (const auto& arg : container.value("args", json::array())) {
        const auto a = arg.get<std::string>();
        if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
    }
    return "";
}

bool has_arg(const json& container, const std::string& arg) {
    for (const auto& a : container.value("args", json::array()))
        if (a == arg) return true;
    return false;
}

}  // namespace rdmanet::test::chart
