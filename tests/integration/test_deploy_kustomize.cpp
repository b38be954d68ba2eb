// deploy/: `kubectl kustomize deploy/` renders offline, and every object it produces is checked:
// the kinds, least-privilege RBAC, the whereabouts-compatible CRDs, the DaemonSet's mounts and
// commands (and that rdmanetctl accepts every flag the DaemonSet passes).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "rdmanet/cni/cli/install.hpp"
#include "rdmanet/cni/doctor/doctor.hpp"
#include "rdmanet/cni/translate/render.hpp"
#include "support/process.hpp"
#include "support/build_paths.hpp"

using nlohmann::json;
using rdmanet::test::run_process;

namespace {

std::vector<json> rendered() {
    auto r = run_process({"kubectl", "kustomize", rdmanet::test::source_dir() + "/deploy"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return rdmanet::cni::translate::yaml_documents_to_json(r.out);
}

const json& one(const std::vector<json>& objects, const std::string& kind, const std::string& name) {
    for (const auto& o : objects)
        if (o["kind"] == kind && o["metadata"]["name"] == name) return o;
    FAIL("no " + kind + " " + name + " in the kustomize output");
    throw std::logic_error("unreachable");
}

std::set<std::string> strings(const json& array) {
    std::set<std::string> out;
    for (const auto& s : array) out.insert(s.get<std::string>());
    return out;
}

std::string help_of(const std::vector<std::string>& args) {
    auto argv = std::vector<std::string>{rdmanet::test::bin_dir() + "/rdmanetctl"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--help");
    auto r = run_process(argv);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
}

// Every --flag of a container's args is one its rdmanetctl subcommand documents.
void check_flags_known(const json& container) {
    const auto command = container["command"];
    REQUIRE(command[0] == "rdmanetctl");
    const auto help = help_of({command[1].get<std::string>()});
    for (const auto& arg : container["args"]) {
        auto flag = arg.get<std::string>();
        flag = flag.substr(0, flag.find('='));
        INFO(container["name"].get<std::string>() + ": " + flag);
        CHECK(help.find(flag) != std::string::npos);
    }
}

std::string arg_value(const json& container, const std::string& flag) {
    for (const auto& arg : container["args"]) {
        const auto a = arg.get<std::string>();
        if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
    }
    return "";
}

std::map<std::string, std::string> mounts(const json& container) {
    std::map<std::string, std::string> out;  // mountPath -> volume name
    for (const auto& m : container.value("volumeMounts", json::array())) out[m["mountPath"]] = m["name"];
    return out;
}

}  // namespace

TEST_CASE("deploy: kustomize renders exactly the expected objects", "[deploy]") {
    const auto objects = rendered();
    std::multiset<std::string> kinds;
    for (const auto& o : objects)
        kinds.insert(o["kind"].get<std::string>() + "/" + o["metadata"]["name"].get<std::string>());
    CHECK(kinds == std::multiset<std::string>{
                       "Namespace/rdmanet-system", "CustomResourceDefinition/ippools.whereabouts.cni.cncf.io",
                       "CustomResourceDefinition/overlappingrangeipreservations.whereabouts.cni.cncf.io",
                       "CustomResourceDefinition/nodeslicepools.whereabouts.cni.cncf.io", "ServiceAccount/rdmanet",
                       "ClusterRole/rdmanet", "ClusterRoleBinding/rdmanet", "DaemonSet/rdmanet",
                       "CronJob/rdmanet-reconcile"});
    for (const auto& o : objects) {
        const std::string kind = o["kind"];
        const bool cluster_scoped = kind == "Namespace" || kind == "CustomResourceDefinition" ||
                                    kind == "ClusterRole" || kind == "ClusterRoleBinding";
        INFO(kind);
        CHECK(o["metadata"].contains("namespace") == !cluster_scoped);
        if (!cluster_scoped) CHECK(o["metadata"]["namespace"] == "rdmanet-system");
        CHECK(o["metadata"]["labels"]["app.kubernetes.io/name"] == "rdmanet");
    }
}

TEST_CASE("deploy: the CRDs are whereabouts' (group, version, scope, names, required fields)", "[deploy]") {
    const auto objects = rendered();
    const auto& pool = one(objects, "CustomResourceDefinition", "ippools.whereabouts.cni.cncf.io");
    CHECK(pool["spec"]["group"] == "whereabouts.cni.cncf.io");
    CHECK(pool["spec"]["scope"] == "Namespaced");
    CHECK(pool["spec"]["names"]["kind"] == "IPPool");
    CHECK(pool["spec"]["names"]["plural"] == "ippools");
    REQUIRE(pool["spec"]["versions"].size() == 1);
    const auto& v = pool["spec"]["versions"][0];
    CHECK(v["name"] == "v1alpha1");
    CHECK(v["served"] == true);
    CHECK(v["storage"] == true);
    CHECK_FALSE(v.contains("subresources"));  // whereabouts writes spec only, no status
    const auto& spec = v["schema"]["openAPIV3Schema"]["properties"]["spec"];
    CHECK(strings(spec["required"]) == std::set<std::string>{"allocations", "range"});
    const auto& entry = spec["properties"]["allocations"]["additionalProperties"];
    CHECK(strings(entry["required"]) == std::set<std::string>{"id", "podref"});
    for (const char* field : {"id", "podref", "ifname"}) CHECK(entry["properties"][field]["type"] == "string");

    const auto& orip =
        one(objects, "CustomResourceDefinition", "overlappingrangeipreservations.whereabouts.cni.cncf.io");
    CHECK(orip["spec"]["group"] == "whereabouts.cni.cncf.io");
    CHECK(orip["spec"]["scope"] == "Namespaced");
    CHECK(orip["spec"]["names"]["kind"] == "OverlappingRangeIPReservation");
    const auto& oschema = orip["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    CHECK(orip["spec"]["versions"][0]["name"] == "v1alpha1");
    CHECK(strings(oschema["required"]) == std::set<std::string>{"spec"});
    CHECK(strings(oschema["properties"]["spec"]["required"]) == std::set<std::string>{"podref"});
    for (const char* field : {"containerid", "podref", "ifname"})
        CHECK(oschema["properties"]["spec"]["properties"][field]["type"] == "string");

    // whereabouts v0.9's NodeSlicePool: spec {range, sliceSize}, status {allocations[{nodeName, sliceRange}]}.
    const auto& nsp = one(objects, "CustomResourceDefinition", "nodeslicepools.whereabouts.cni.cncf.io");
    CHECK(nsp["spec"]["group"] == "whereabouts.cni.cncf.io");
    CHECK(nsp["spec"]["scope"] == "Namespaced");
    CHECK(nsp["spec"]["names"]["kind"] == "NodeSlicePool");
    CHECK(nsp["spec"]["names"]["plural"] == "nodeslicepools");
    REQUIRE(nsp["spec"]["versions"].size() == 1);
    CHECK(nsp["spec"]["versions"][0]["name"] == "v1alpha1");
    CHECK_FALSE(nsp["spec"]["versions"][0].contains("subresources"));  // status written with the object
    const auto& nschema = nsp["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    CHECK(strings(nschema["spec"]["required"]) == std::set<std::string>{"range", "sliceSize"});
    CHECK(strings(nschema["status"]["required"]) == std::set<std::string>{"allocations"});
    const auto& item = nschema["status"]["properties"]["allocations"]["items"];
    CHECK(strings(item["required"]) == std::set<std::string>{"nodeName", "sliceRange"});
}

TEST_CASE("deploy: RBAC is least privilege", "[deploy]") {
    const auto objects = rendered();
    const auto& role = one(objects, "ClusterRole", "rdmanet");
    // (apiGroup, resource) -> verbs; every rule spelled out, no wildcards anywhere.
    std::map<std::pair<std::string, std::string>, std::set<std::string>> granted;
    for (const auto& rule : role["rules"]) {
        CHECK_FALSE(rule.contains("nonResourceURLs"));
        CHECK_FALSE(rule.contains("resourceNames"));
        for (const auto& group : rule["apiGroups"])
            for (const auto& resource : rule["resources"])
                for (const auto& verb : rule["verbs"]) {
                    CHECK(group != "*");
                    CHECK(resource != "*");
                    CHECK(verb != "*");
                    granted[{group, resource}].insert(verb.get<std::string>());
                }
    }
    const std::set<std::string> ipam_verbs{"get", "list", "create", "update", "patch", "delete"};
    CHECK(granted == std::map<std::pair<std::string, std::string>, std::set<std::string>>{
                         {{"whereabouts.cni.cncf.io", "ippools"}, ipam_verbs},
                         {{"whereabouts.cni.cncf.io", "overlappingrangeipreservations"}, ipam_verbs},
                         {{"whereabouts.cni.cncf.io", "nodeslicepools"}, ipam_verbs},
                         {{"nv-ipam.nvidia.com", "ippools"}, {"get", "list", "watch"}},
                         {{"nv-ipam.nvidia.com", "cidrpools"}, {"get", "list", "watch"}},
                         {{"nv-ipam.nvidia.com", "ippools/status"}, {"update"}},
                         {{"nv-ipam.nvidia.com", "cidrpools/status"}, {"update"}},
                         {{"", "pods"}, {"get", "list"}},
                         {{"", "nodes"}, {"get", "list"}},
                         {{"resource.k8s.io", "resourceclaims"}, {"get", "list"}}});

    const auto& binding = one(objects, "ClusterRoleBinding", "rdmanet");
    CHECK(binding["roleRef"] ==
          json({{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "rdmanet"}}));
    CHECK(binding["subjects"] ==
          json::array({{{"kind", "ServiceAccount"}, {"name", "rdmanet"}, {"namespace", "rdmanet-system"}}}));
}

TEST_CASE("deploy: the DaemonSet installs, watches and runs the node agent with the right mounts", "[deploy]") {
    const auto objects = rendered();
    const auto& ds = one(objects, "DaemonSet", "rdmanet");
    const auto& pod = ds["spec"]["template"]["spec"];
    // The selector selects the template.
    for (const auto& [k, v] : ds["spec"]["selector"]["matchLabels"].items())
        CHECK(ds["spec"]["template"]["metadata"]["labels"][k] == v);
    CHECK(pod["hostNetwork"] == true);
    CHECK(pod["serviceAccountName"] == "rdmanet");
    CHECK(pod["tolerations"] == json::array({{{"operator", "Exists"}}}));

    std::map<std::string, std::string> host_paths;  // volume -> host path
    for (const auto& v : pod["volumes"]) host_paths[v["name"]] = v["hostPath"]["path"];
    CHECK(host_paths == std::map<std::string, std::string>{{"cni-bin", "/opt/cni/bin"},
                                                           {"cni-conf", "/etc/cni/net.d"},
                                                           {"cni-state", "/var/lib/cni"},
                                                           {"log", "/var/log/rdmanet"},
                                                           {"modprobe-d", "/etc/modprobe.d"},
                                                           {"netns", "/run/netns"},
                                                           {"host-sys", "/sys"},
                                                           {"pci-drivers", "/sys/bus/pci/drivers"},
                                                           {"host-proc-cmdline", "/proc/cmdline"},
                                                           {"run-rdmanet", "/run/rdmanet"},
                                                           {"dranet-profiles", "/etc/rdmanet/profiles"}});

    REQUIRE(pod["initContainers"].size() == 1);
    const auto& init = pod["initContainers"][0];
    CHECK(init["command"] == json({"rdmanetctl", "install"}));
    REQUIRE(pod["containers"].size() == 3);
    const auto& watcher = pod["containers"][0];
    const auto& agent = pod["containers"][1];
    // DRANET's profile provider: a root-only socket in the host's /run/rdmanet, the admin's
    // profiles read-only, no capability, the node name for node slices.
    const auto& provider = pod["containers"][2];
    CHECK(provider["command"] == json({"rdmanetctl", "dranet-provider"}));
    check_flags_known(provider);
    const auto pm = mounts(provider);
    CHECK(arg_value(provider, "--socket") == "/run/rdmanet/dranet.sock");
    CHECK(pm.at("/run/rdmanet") == "run-rdmanet");
    CHECK(pm.at(arg_value(provider, "--profiles")) == "dranet-profiles");
    CHECK(pm.at("/var/lib/cni") == "cni-state");
    CHECK(pm.at("/etc/cni/net.d") == "cni-conf");
    CHECK(provider["securityContext"]["capabilities"]["drop"] == json({"ALL"}));
    CHECK_FALSE(provider["securityContext"]["capabilities"].contains("add"));
    CHECK(provider["env"][0]["name"] == "NODE_NAME");
    // Profiles that name no kubeconfig: the pod's service account, the agent's namespace.
    CHECK(std::find(provider["args"].begin(), provider["args"].end(), json("--in-cluster")) != provider["args"].end());
    CHECK(arg_value(provider, "--namespace") == arg_value(agent, "--namespace"));
    CHECK(watcher["command"] == json({"rdmanetctl", "install"}));
    CHECK(std::find(watcher["args"].begin(), watcher["args"].end(), json("--watch")) != watcher["args"].end());
    CHECK(agent["command"] == json({"rdmanetctl", "agent"}));
    CHECK(arg_value(agent, "--interval") == "60");
    CHECK(std::find(agent["args"].begin(), agent["args"].end(), json("--in-cluster")) != agent["args"].end());
    // Metrics on the node's loopback only (hostNetwork): the admin opens them deliberately.
    CHECK(arg_value(agent, "--metrics-address").rfind("127.0.0.1:", 0) == 0);
    // Per-node scope: the node name comes from the downward API.
    REQUIRE(agent["env"].size() == 1);
    CHECK(agent["env"][0]["name"] == "NODE_NAME");
    CHECK(agent["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName");

    // The installer's directories are where the host's are mounted.
    for (const auto* c : {&init, &watcher}) {
        const auto m = mounts(*c);
        CHECK(m.at(arg_value(*c, "--cni-bin-dir")) == "cni-bin");
        CHECK(m.at(arg_value(*c, "--cni-conf-dir")) == "cni-conf");
        CHECK(arg_value(*c, "--ipam-namespace") == "kube-system");
    }
    CHECK(mounts(init).at(arg_value(init, "--modprobe-dir")) == "modprobe-d");
    const auto am = mounts(agent);
    CHECK(am.at("/var/lib/cni") == "cni-state");
    CHECK(am.at("/var/log/rdmanet") == "log");
    CHECK(am.at("/etc/cni/net.d") == "cni-conf");
    CHECK(am.at("/opt/cni/bin") == "cni-bin");
    CHECK(am.at("/run/netns") == "netns");
    // The claim GC reaches the provider's socket (read-only: connecting writes nothing).
    CHECK(arg_value(agent, "--dranet-socket") == arg_value(provider, "--socket"));
    CHECK(am.at("/run/rdmanet") == "run-rdmanet");
    for (const auto& m : agent["volumeMounts"])
        if (m["name"] == "run-rdmanet") CHECK(m.value("readOnly", false));
    for (const auto& m : agent["volumeMounts"])
        if (m["name"] == "netns") CHECK(m["mountPropagation"] == "HostToContainer");
    CHECK(agent["securityContext"]["capabilities"]["add"] == json({"NET_ADMIN", "SYS_ADMIN"}));
    // The agent's only writable piece of /sys: the PCI drivers directory an InfiniBand VF GUID
    // restore rebinds the VF's driver through. Nothing else of the host's /sys is mounted there.
    CHECK(am.at("/sys/bus/pci/drivers") == "pci-drivers");
    for (const auto& m : agent["volumeMounts"]) {
        const std::string path = m["mountPath"];
        if (path == "/sys/bus/pci/drivers")
            CHECK_FALSE(m.value("readOnly", false));
        else
            CHECK(path.rfind("/sys", 0) != 0);
    }
    // `doctor --root /host` in the installer sees the node's sysfs, kernel command line and
    // modprobe.d, read-only.
    for (const auto& [path, volume] : std::map<std::string, std::string>{{"/host/sys", "host-sys"},
                                                                         {"/host/proc/cmdline", "host-proc-cmdline"},
                                                                         {"/host/etc/modprobe.d", "modprobe-d"}}) {
        INFO(path);
        bool found = false;
        for (const auto& m : watcher["volumeMounts"]) {
            if (m["mountPath"] == path) {
                found = true;
                CHECK(m["name"] == volume);
                CHECK(m.value("readOnly", false));
            }
        }
        CHECK(found);
    }

    for (const auto* c : {&init, &watcher, &agent}) {
        INFO((*c)["name"]);
        CHECK((*c)["image"] == "ghcr.io/rdmanet/rdmanet:v0.1.0");
        CHECK((*c)["securityContext"]["allowPrivilegeEscalation"] == false);
        CHECK((*c)["securityContext"]["capabilities"]["drop"] == json({"ALL"}));
        CHECK_FALSE((*c)["securityContext"].value("privileged", false));
        CHECK((*c)["resources"]["limits"].contains("memory"));
    }
    // The Dockerfile puts the binaries where --source-dir says.
    CHECK(arg_value(init, "--source-dir") == "/opt/rdmanet/bin");
}

TEST_CASE("deploy: rdmanetctl accepts every flag the DaemonSet passes", "[deploy]") {
    const auto objects = rendered();
    const auto& pod = one(objects, "DaemonSet", "rdmanet")["spec"]["template"]["spec"];
    check_flags_known(pod["initContainers"][0]);
    for (const auto& c : pod["containers"]) check_flags_known(c);
    const auto& job = one(objects, "CronJob", "rdmanet-reconcile")["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    for (const auto& c : job["containers"]) check_flags_known(c);
}

TEST_CASE("deploy: the cluster-wide reconcile runs once per cluster, not on every node", "[deploy]") {
    const auto objects = rendered();
    const auto& cron = one(objects, "CronJob", "rdmanet-reconcile");
    CHECK(cron["spec"]["concurrencyPolicy"] == "Forbid");
    const auto& pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    CHECK(pod["serviceAccountName"] == "rdmanet");
    REQUIRE(pod["containers"].size() == 1);
    const auto& c = pod["containers"][0];
    CHECK(c["command"] == json({"rdmanetctl", "reconcile"}));
    CHECK(std::find(c["args"].begin(), c["args"].end(), json("--in-cluster")) != c["args"].end());
    CHECK(c["image"] == "ghcr.io/rdmanet/rdmanet:v0.1.0");
    CHECK(c["securityContext"]["capabilities"]["drop"] == json({"ALL"}));
    // No DaemonSet container reconciles the whole cluster any more.
    for (const auto& dc : one(objects, "DaemonSet", "rdmanet")["spec"]["template"]["spec"]["containers"])
        CHECK(dc["command"] != json({"rdmanetctl", "reconcile"}));
}
