// deploy/helm/rdmanet with the real helm: lint, the default render against the kustomize base
// (real kustomize) object by object, what each value changes, the schema's refusals, and the
// rendered commands run with this build's rdmanetctl.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "chart_render.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/translate/render.hpp"
#include "support/process.hpp"
#include "support/build_paths.hpp"

using namespace rdmanet::test::chart;
using rdmanet::test::run_process;
namespace fs = std::filesystem;

namespace {

std::map<std::string, json> by_key(const std::vector<json>& objects) {
    std::map<std::string, json> out;
    for (const auto& o : objects) {
        INFO(key_of(o));
        CHECK(out.count(key_of(o)) == 0);  // no object twice
        out[key_of(o)] = o;
    }
    return out;
}

std::set<std::string> volume_names(const json& pod) {
    std::set<std::string> out;
    for (const auto& v : pod["volumes"]) out.insert(v["name"].get<std::string>());
    return out;
}

// Every mount names a volume of the pod, every volume is mounted, the selector selects the template.
void check_pod_consistent(json ds) {
    auto pod = pod_spec(ds);
    const auto volumes = volume_names(pod);
    std::set<std::string> mounted;
    for (const char* list : {"initContainers", "containers"})
        for (json c : pod.value(list, json::array()))
            for (json m : c.value("volumeMounts", json::array())) {
                INFO(c["name"].get<std::string>() + " mounts " + m["name"].get<std::string>());
                CHECK(volumes.count(m["name"].get<std::string>()) == 1);
                mounted.insert(m["name"].get<std::string>());
            }
    CHECK(mounted == volumes);
    for (const auto& [k, v] : ds["spec"]["selector"]["matchLabels"].items())
        CHECK(ds["spec"]["template"]["metadata"]["labels"][k] == v);
}

// (apiGroup, resource) -> verbs of a ClusterRole.
std::map<std::pair<std::string, std::string>, std::set<std::string>> grants(const json& role) {
    std::map<std::pair<std::string, std::string>, std::set<std::string>> out;
    for (const auto& rule : role["rules"])
        for (const auto& group : rule["apiGroups"])
            for (const auto& resource : rule["resources"])
                for (const auto& verb : rule["verbs"]) out[{group, resource}].insert(verb.get<std::string>());
    return out;
}

std::set<std::string> granted_groups(const json& role) {
    std::set<std::string> out;
    for (const auto& [key, verbs] : grants(role)) out.insert(key.first);
    return out;
}

const json* volume(const json& pod, const std::string& name) {
    for (const auto& v : pod.at("volumes"))
        if (v.at("name") == name) return &v;
    return nullptr;
}

// Copies (so that a missing key reads as null and fails a CHECK instead of asserting).
json vol(const json& pod, const std::string& name) {
    const json* v = volume(pod, name);
    INFO("volume " << name);
    REQUIRE(v);
    return *v;
}

json ctr(const json& pod, const std::string& name) {
    const json* c = container(pod, name);
    INFO("container " << name);
    REQUIRE(c);
    return *c;
}

std::string mount_path(const json& c, const std::string& volume_name) {
    for (const auto& m : c.value("volumeMounts", json::array()))
        if (m["name"] == volume_name) return m["mountPath"];
    return "";
}

std::string help_of(const std::string& subcommand) {
    auto r = run_process({rdmanet::test::bin_dir() + "/rdmanetctl", subcommand, "--help"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
}

// Every container of every workload that runs rdmanetctl passes only flags its subcommand has.
void check_flags_known(const std::vector<json>& objects) {
    std::map<std::string, std::string> helps;
    for (const auto& o : objects) {
        if (o["kind"] != "DaemonSet" && o["kind"] != "CronJob") continue;
        auto pod = pod_spec(o);
        for (const char* list : {"initContainers", "containers"})
            for (json c : pod.value(list, json::array())) {
                if (c["command"][0] != "rdmanetctl") continue;
                const std::string sub = c["command"][1];
                if (!helps.count(sub)) helps[sub] = help_of(sub);
                for (const auto& arg : c["args"]) {
                    auto flag = arg.get<std::string>();
                    if (flag.rfind("--", 0) != 0) continue;  // the value of the flag before it
                    flag = flag.substr(0, flag.find('='));
                    INFO(c["name"].get<std::string>() + ": " + flag);
                    CHECK(helps[sub].find(flag + " ") != std::string::npos);
                }
            }
    }
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    return s;
}

struct TempDir {
    std::string path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "rdmanet-helm-test-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

}  // namespace

TEST_CASE("helm: lint --strict passes with the default values and every test values file", "[helm]") {
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{}, {"-f", kValuesDir + "/local.yaml"}, {"-f", kValuesDir + "/kubernetes.yaml"}}) {
        std::vector<std::string> args{"lint", "--strict", kChartDir};
        args.insert(args.end(), extra.begin(), extra.end());
        const auto r = helm(args);
        INFO(r.out + r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("0 chart(s) failed") != std::string::npos);
    }
}

TEST_CASE("helm: the default render equals the kustomize base object by object", "[helm]") {
    const auto base = by_key(kustomize_base());
    const auto chart_objects = render();
    std::map<std::string, json> chart;
    for (const auto& [key, o] : by_key(chart_objects)) chart[key] = without_helm_labels(o);

    std::set<std::string> base_keys, chart_keys;
    for (const auto& [key, o] : base) base_keys.insert(key);
    for (const auto& [key, o] : chart) chart_keys.insert(key);
    CHECK(chart_keys == base_keys);
    CHECK(base_keys.size() == 9);  // namespace, 3 CRDs, SA, ClusterRole, binding, DaemonSet, CronJob
    for (const auto& [key, o] : base) {
        if (!chart.count(key)) continue;
        INFO(key << " differs (JSON patch from the kustomize base to the chart): "
                 << json::diff(o, chart.at(key)).dump());
        CHECK(chart.at(key) == o);
    }
    // What was set aside is what Helm adds, on every object (CRDs of crds/ are not templated).
    for (json o : chart_objects) {
        if (o["kind"] == "CustomResourceDefinition") continue;
        INFO(key_of(o));
        auto labels = o["metadata"]["labels"];
        CHECK(labels["app.kubernetes.io/managed-by"] == "Helm");
        CHECK(labels["app.kubernetes.io/instance"] == "rdmanet");
        CHECK(labels["helm.sh/chart"] == "rdmanet-0.1.0");
        CHECK(labels["app.kubernetes.io/version"] == "v0.1.0");
    }
}

TEST_CASE("helm: the chart's nv-ipam CRDs are deploy/crds' and kept on uninstall", "[helm]") {
    const auto objects = render_values("kubernetes");
    for (const char* name : {"ippools.nv-ipam.nvidia.com", "cidrpools.nv-ipam.nvidia.com"}) {
        INFO(name);
        auto crd = one(objects, "CustomResourceDefinition", name);
        CHECK(crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep");
        CHECK(crd["metadata"]["labels"]["app.kubernetes.io/part-of"] == "rdmanet");
        const std::string plural = std::string(name).substr(0, std::string(name).find('.'));
        std::ifstream in(rdmanet::test::source_dir() + "/deploy/crds/nv-ipam.nvidia.com_" + plural + ".yaml");
        const std::string text{std::istreambuf_iterator<char>(in), {}};
        const auto source = rdmanet::cni::translate::yaml_documents_to_json(text);
        REQUIRE_FALSE(source.empty());
        auto a = source.back(), b = crd;
        a["metadata"].erase("labels");
        b["metadata"].erase("labels");
        b["metadata"].erase("annotations");
        INFO(json::diff(a, b).dump());
        CHECK(a == b);
    }
    // Off by default and with the local datastore.
    CHECK_FALSE(find(render(), "CustomResourceDefinition", "ippools.nv-ipam.nvidia.com"));
    CHECK_FALSE(find(render_values("local", {"--set", "datastore.kubernetes.nvIpamCrds=true"}),
                     "CustomResourceDefinition", "ippools.nv-ipam.nvidia.com"));
}

TEST_CASE("helm: local datastore without the provider: no pool access and no token on the node and no CronJob",
          "[helm]") {
    const auto objects = render_values("local");
    CHECK_FALSE(find(objects, "CronJob", "rdmanet-reconcile"));
    json ns = one(objects, "Namespace", "rdmanet-local");
    CHECK(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged");
    for (const auto& o : objects)
        if (o.at("metadata").contains("namespace")) CHECK(o.at("metadata").at("namespace") == "rdmanet-local");

    auto role = one(objects, "ClusterRole", "rdmanet");
    CHECK(granted_groups(role) == std::set<std::string>{""});  // pods and nodes only
    CHECK(grants(role).at({"", "pods"}) == std::set<std::string>{"get", "list"});

    auto ds = one(objects, "DaemonSet", "rdmanet");
    check_pod_consistent(ds);
    auto pod = pod_spec(ds);
    CHECK(pod["containers"].size() == 2);
    CHECK_FALSE(container(pod, "dranet-provider"));
    CHECK_FALSE(volume(pod, "run-rdmanet"));
    CHECK_FALSE(volume(pod, "dranet-profiles"));
    for (const char* name : {"install", "installer"}) {
        INFO(name);
        auto c = ctr(pod, name);
        // An empty directory, as its own argument (CLI11 refuses "--service-account-dir=").
        const auto args = c["args"].get<std::vector<std::string>>();
        const auto at = std::find(args.begin(), args.end(), "--service-account-dir");
        REQUIRE(at != args.end());
        REQUIRE(at + 1 != args.end());
        CHECK(*(at + 1) == "");
        CHECK(arg_value(c, "--ipam-namespace").empty());
    }
    auto agent = ctr(pod, "agent");
    CHECK(has_arg(agent, "--in-cluster"));  // its own node's pods
    CHECK(arg_value(agent, "--namespace").empty());
    CHECK(arg_value(agent, "--dranet-socket").empty());
    check_flags_known(objects);
}

namespace {

// The install init container's command line, its paths moved into a temporary host tree.
std::vector<std::string> install_argv(const std::vector<json>& objects, const std::string& ds_name,
                                      const std::string& host) {
    const auto init = ctr(pod_spec(one(objects, "DaemonSet", ds_name)), "install");
    std::vector<std::string> argv{rdmanet::test::bin_dir() + "/rdmanetctl", "install"};
    for (const auto& arg : init["args"]) {
        auto a = arg.get<std::string>();
        a = replace_all(a, "=/opt/rdmanet/bin", "=" + rdmanet::test::bin_dir());
        a = replace_all(a, "=/host/", "=" + host + "/");
        argv.push_back(a);
    }
    return argv;
}

}  // namespace

TEST_CASE("helm: local datastore: the install init container runs with this build and writes no kubeconfig", "[helm]") {
    TempDir host;
    for (const char* d : {"/opt/cni/bin", "/etc/cni/net.d", "/etc/modprobe.d"}) fs::create_directories(host.path + d);
    // The kubernetes datastore's arguments need the pod's service account (which this machine
    // has not): the local datastore's run without one.
    if (!fs::exists("/var/run/secrets/kubernetes.io/serviceaccount/token")) {  // not in a pod
        const auto kube = run_process(install_argv(render(), "rdmanet", host.path));
        CHECK(kube.exit_code != 0);
        CHECK(kube.err.find("service account token") != std::string::npos);
    }

    const auto r = run_process(install_argv(render_values("local"), "rdmanet", host.path));
    INFO(r.out + r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(fs::exists(host.path + "/opt/cni/bin/rdmanet"));
    CHECK(fs::exists(host.path + "/opt/cni/bin/rdmanet-ipam"));
    CHECK(fs::exists(host.path + "/etc/cni/net.d/rdmanet.d/policy.json"));
    CHECK_FALSE(fs::exists(host.path + "/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig"));
}

TEST_CASE("helm: kubernetes datastore with the provider: every value lands where it says", "[helm]") {
    const auto objects = render_values("kubernetes");
    for (const auto& o : objects) {
        INFO(key_of(o));
        if (o.at("metadata").contains("namespace")) CHECK(o.at("metadata").at("namespace") == "rdmanet-kube");
    }
    auto ds = one(objects, "DaemonSet", "rdma");
    check_pod_consistent(ds);
    auto pod = pod_spec(ds);
    auto cron = one(objects, "CronJob", "rdma-reconcile");
    CHECK(cron["spec"]["schedule"] == "*/5 * * * *");
    auto job = pod_spec(cron);
    CHECK(one(objects, "ServiceAccount", "rdma").at("metadata").at("namespace") == "rdmanet-kube");
    CHECK(pod["serviceAccountName"] == "rdma");
    CHECK(job["serviceAccountName"] == "rdma");
    auto binding = one(objects, "ClusterRoleBinding", "rdma");
    CHECK(binding["roleRef"]["name"] == "rdma");
    CHECK(binding["subjects"][0] ==
          json({{"kind", "ServiceAccount"}, {"name", "rdma"}, {"namespace", "rdmanet-kube"}}));
    CHECK(granted_groups(one(objects, "ClusterRole", "rdma")) ==
          std::set<std::string>{"", "whereabouts.cni.cncf.io", "nv-ipam.nvidia.com", "resource.k8s.io"});

    // Image, pull policy and secrets on every container of both workloads.
    for (json* p : {&pod, &job}) {
        CHECK((*p)["imagePullSecrets"] == json::array({{{"name", "regcred"}}}));
        for (const char* list : {"initContainers", "containers"})
            for (json c : p->value(list, json::array())) {
                INFO(c["name"]);
                CHECK(c["image"] == "registry.example.com/hpc/rdmanet:v0.1.0-rc1");
                CHECK(c["imagePullPolicy"] == "Always");
            }
    }
    // The IPPools' namespace everywhere the IPAM reaches the API.
    CHECK(arg_value(ctr(pod, "install"), "--ipam-namespace") == "ipam-pools");
    CHECK(arg_value(ctr(pod, "installer"), "--ipam-namespace") == "ipam-pools");
    CHECK(arg_value(ctr(pod, "agent"), "--namespace") == "ipam-pools");
    CHECK(arg_value(ctr(pod, "dranet-provider"), "--namespace") == "ipam-pools");
    CHECK(arg_value(job["containers"][0], "--namespace") == "ipam-pools");

    // The provider's socket: one path for the provider and the agent, its directory the host's.
    auto provider = ctr(pod, "dranet-provider");
    auto agent = ctr(pod, "agent");
    CHECK(arg_value(provider, "--socket") == "/run/dranet-rdmanet/provider.sock");
    CHECK(arg_value(agent, "--dranet-socket") == "/run/dranet-rdmanet/provider.sock");
    CHECK(arg_value(provider, "--threads") == "8");
    CHECK(vol(pod, "run-rdmanet")["hostPath"]["path"] == "/run/dranet-rdmanet");
    CHECK(mount_path(provider, "run-rdmanet") == "/run/dranet-rdmanet");
    CHECK(mount_path(agent, "run-rdmanet") == "/run/dranet-rdmanet");
    CHECK(vol(pod, "dranet-profiles")["hostPath"]["path"] == "/etc/dranet/profiles");
    CHECK(mount_path(provider, "dranet-profiles") == arg_value(provider, "--profiles"));

    // Installer, agent, scheduling.
    CHECK(arg_value(ctr(pod, "install"), "--rdma-netns-mode") == "exclusive");
    CHECK(arg_value(ctr(pod, "installer"), "--interval") == "30");
    CHECK(arg_value(agent, "--interval") == "45");
    CHECK(arg_value(agent, "--metrics-address") == "127.0.0.1:9751");
    CHECK(pod["nodeSelector"]["feature.node.kubernetes.io/rdma.available"] == "true");
    CHECK(pod["tolerations"] ==
          json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}));
    CHECK(pod["affinity"]["nodeAffinity"].contains("requiredDuringSchedulingIgnoredDuringExecution"));
    CHECK(pod["priorityClassName"] == "system-cluster-critical");
    CHECK(ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 2);
    const std::map<std::string, json> limits{{"install", "96Mi"},
                                             {"node-policy", "96Mi"},
                                             {"installer", "80Mi"},
                                             {"agent", "160Mi"},
                                             {"dranet-provider", "144Mi"}};
    for (const auto& [name, memory] : limits) {
        INFO(name);
        CHECK((ctr(pod, name))["resources"]["limits"]["memory"] == memory);
    }
    CHECK(job["containers"][0]["resources"]["limits"]["memory"] == "132Mi");
    check_flags_known(objects);
}

TEST_CASE("helm: nodePolicy is written on every node and parses as a node policy and a change rolls the pods",
          "[helm]") {
    const auto objects = render_values("kubernetes");
    auto cm = one(objects, "ConfigMap", "rdma-node-policy");
    const std::string policy_text = cm["data"]["policy.json"];
    const auto policy = json::parse(policy_text);
    CHECK(policy["version"] == 1);
    CHECK(policy["devices"]["vendorIds"] == json({"15b3"}));
    auto ds = one(objects, "DaemonSet", "rdma");
    auto pod = pod_spec(ds);
    // After "install" (which writes the defaults on a node that has none), before the containers.
    REQUIRE(pod["initContainers"].size() == 2);
    CHECK(pod["initContainers"][0]["name"] == "install");
    auto writer = pod["initContainers"][1];
    CHECK(writer["name"] == "node-policy");
    CHECK(vol(pod, "node-policy")["configMap"]["name"] == "rdma-node-policy");

    // The init container's script, run on a copy of the host: the policy lands where the plugin
    // reads it (/etc/cni/net.d/rdmanet.d/policy.json), 0644, and the plugin's parser accepts it.
    TempDir host;
    fs::create_directories(host.path + "/etc/cni/net.d/rdmanet.d");
    fs::create_directories(host.path + "/configmap");
    std::ofstream(host.path + "/configmap/policy.json") << policy_text;
    std::ofstream(host.path + "/etc/cni/net.d/rdmanet.d/policy.json") << "{\"version\": 1}\n";  // the node's
    std::vector<std::string> argv;
    for (const auto& part : writer["command"]) {
        auto p = part.get<std::string>();
        p = replace_all(p, "/host/etc/cni/net.d", host.path + "/etc/cni/net.d");
        p = replace_all(p, "/etc/rdmanet/node-policy", host.path + "/configmap");
        argv.push_back(p);
    }
    for (int round = 0; round < 2; ++round) {  // and again on a restart
        const auto r = run_process(argv);
        INFO(r.out + r.err);
        REQUIRE(r.exit_code == 0);
    }
    const std::string written_path = host.path + "/etc/cni/net.d/rdmanet.d/policy.json";
    std::ifstream in(written_path);
    const std::string written{std::istreambuf_iterator<char>(in), {}};
    CHECK(json::parse(written) == policy);
    CHECK((fs::status(written_path).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read));
    CHECK(fs::directory_iterator(host.path + "/etc/cni/net.d/rdmanet.d")->path().filename() == "policy.json");
    const auto modes = rdmanet::cni::mode_names();
    const auto parsed = rdmanet::cni::parse_node_policy(written, written_path, modes);
    REQUIRE(parsed.modes.has_value());
    CHECK(*parsed.modes == std::vector<std::string>{"macvlan", "hostdev", "sriov"});
    CHECK(parsed.devices.vfs_only);
    CHECK_FALSE(parsed.masters.allow_uplink);

    // A new policy changes the pod template (a rollout); the same one does not.
    const auto annotation = [](const std::vector<json>& o) {
        json ds = one(o, "DaemonSet", "rdma");
        return ds["spec"]["template"]["metadata"]["annotations"]["checksum/node-policy"];
    };
    const auto again = render_values("kubernetes");
    const auto changed = render_values("kubernetes", {"--set", "nodePolicy.modes={macvlan}"});
    CHECK(annotation(again) == annotation(objects));
    CHECK(annotation(changed) != annotation(objects));
    // Not managed by default: no ConfigMap, no init container, no annotation.
    const auto defaults = render();
    CHECK_FALSE(find(defaults, "ConfigMap", "rdmanet-node-policy"));
    CHECK(pod_spec(one(defaults, "DaemonSet", "rdmanet")).at("initContainers").size() == 1);
}

TEST_CASE("helm: the values schema refuses what the node would refuse and names the value", "[helm]") {
    const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
        {{"--set", "datastore.type=sqlite"}, "datastore"},
        {{"--set", "nodePolicy.mdoes={macvlan}"}, "mdoes"},
        {{"--set", "nodePolicy.modes={vxlan}"}, "modes"},
        {{"--set", "nodePolicy.stateDir=var/lib"}, "stateDir"},
        {{"--set", "dranetProvider.socketPath=dranet.sock"}, "socketPath"},
        {{"--set", "install.rdmaNetnsMode=private"}, "rdmaNetnsMode"},
        {{"--set", "image.pullPolicy=Sometimes"}, "pullPolicy"},
        {{"--set", "agent.intreval=5"}, "intreval"},
    };
    for (const auto& [args, names] : bad) {
        std::vector<std::string> argv{"template", "rdmanet", kChartDir};
        argv.insert(argv.end(), args.begin(), args.end());
        const auto r = helm(argv);
        INFO(args[1] << ": " << r.err);
        CHECK(r.exit_code != 0);
        CHECK(r.err.find(names) != std::string::npos);
    }
}
