// The chart's objects on a real kube-apiserver + etcd (tests/apiserver/real_apiserver.hpp, started
// empty: nothing of deploy/ created): every rendered object accepted by a server-side dry run
// with strict field validation, and a real `helm install`, upgrade and uninstall.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "apiserver/real_apiserver.hpp"
#include "chart_render.hpp"

using namespace rdmanet::test::chart;
using apiserver_test::RealApiServer;

namespace {

// The server's binaries (KUBEBUILDER_ASSETS, or RDMANET_KUBE_APISERVER + RDMANET_ETCD), else
// the CI failure / skip of a missing peer.
void require_real_apiserver() {
    std::string why;
    if (!apiserver_test::find_real_binaries(&why)) missing_peer("kube-apiserver and etcd: " + why);
}

apiserver_test::RealServerOptions empty_cluster() {
    apiserver_test::RealServerOptions options;
    options.crds = false;
    options.project_manifests = false;
    return options;
}

// The REST collection of an object: /api/v1 or /apis/<group>/<version>, the namespace's part for
// a namespaced object, and the plural (every kind the chart renders is pluralized with "s").
std::string collection(const json& o) {
    const std::string api_version = o.at("apiVersion");
    std::string path = api_version == "v1" ? "/api/v1" : "/apis/" + api_version;
    if (o.at("metadata").contains("namespace")) path += "/namespaces/" + o["metadata"]["namespace"].get<std::string>();
    std::string plural = o.at("kind");
    for (auto& ch : plural) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return path + "/" + plural + "s";
}

std::string object_path(const json& o) { return collection(o) + "/" + o["metadata"]["name"].get<std::string>(); }

// Until the CRD is Established and its resource lists (a fresh CRD answers "429 storage is
// (re)initializing" a moment after Established).
void wait_established(const RealApiServer& server, const std::string& crd) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    auto wait = [&](const std::string& what, auto&& done) {
        while (!done()) {
            if (std::chrono::steady_clock::now() > give_up) FAIL(crd + " " + what + " after 60 s");
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    };
    json versions;
    wait("not Established", [&] {
        auto r = server.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + crd);
        if (r.status != 200) return false;
        versions = r.body["spec"]["versions"];
        for (const auto& c : r.body["status"].value("conditions", json::array()))
            if (c.value("type", "") == "Established" && c.value("status", "") == "True") return true;
        return false;
    });
    const auto dot = crd.find('.');
    const std::string list =
        "/apis/" + crd.substr(dot + 1) + "/" + versions[0]["name"].get<std::string>() + "/" + crd.substr(0, dot);
    wait("not listable", [&] { return server.request("GET", list).status == 200; });
}

// CRDs and namespaces for real (what the rest needs to exist), everything else as a dry run.
void dry_run_create(const RealApiServer& server, const std::vector<json>& objects) {
    for (const auto& o : objects) {
        if (o["kind"] != "CustomResourceDefinition") continue;
        INFO("create " << key_of(o));
        auto r = server.request("POST", collection(o), o.dump());
        INFO(r.text);
        if (r.status == 409) {  // created by an earlier render of this test: it must be the same CRD
            auto existing = server.request("GET", object_path(o));
            CHECK(existing.body["spec"]["versions"] == o["spec"]["versions"]);
            continue;
        }
        REQUIRE(r.status == 201);
        wait_established(server, o["metadata"]["name"]);
    }
    for (const auto& o : objects) {
        if (o["kind"] != "Namespace") continue;
        INFO("create " << key_of(o));
        auto dry = server.request("POST", collection(o) + "?dryRun=All&fieldValidation=Strict", o.dump());
        INFO(dry.text);
        CHECK(dry.status == 201);
        auto r = server.request("POST", collection(o), o.dump());
        INFO(r.text);
        REQUIRE(r.status == 201);
    }
    for (const auto& o : objects) {
        if (o["kind"] == "CustomResourceDefinition" || o["kind"] == "Namespace") continue;
        INFO("dry-run create " << key_of(o));
        // Strict: a field the server does not know (a misspelt key, a field of another API
        // version) is an error, not a warning it drops.
        auto r = server.request("POST", collection(o) + "?dryRun=All&fieldValidation=Strict", o.dump());
        INFO(r.text);
        CHECK(r.status == 201);
        CHECK(r.body.value("kind", "") == o["kind"]);
        // A dry run stores nothing.
        CHECK(server.request("GET", object_path(o)).status == 404);
    }
}

std::string admin_kubeconfig(const RealApiServer& server) {
    apiserver_test::KubeconfigOptions options;
    options.token = server.admin_token();
    options.ns = "default";
    return server.write_kubeconfig("admin.kubeconfig", options);
}

}  // namespace

TEST_CASE("helm: a real kube-apiserver accepts every rendered object (server-side dry run with strict fields)",
          "[helm][apiserver]") {
    require_real_apiserver();
    const auto defaults = render();
    const auto local = render_values("local");
    const auto kube = render_values("kubernetes");
    RealApiServer server(empty_cluster());
    for (const auto* objects : {&defaults, &local, &kube}) dry_run_create(server, *objects);
    // The server now serves what the IPAM uses: whereabouts' and (kubernetes.yaml) nv-ipam's pools.
    CHECK(server.request("GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/ippools").status == 200);
    CHECK(server.request("GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/nodeslicepools").status == 200);
    CHECK(server.request("GET", "/apis/nv-ipam.nvidia.com/v1alpha1/cidrpools").status == 200);
}

TEST_CASE("helm: install then upgrade then uninstall on a real kube-apiserver", "[helm][apiserver]") {
    require_real_apiserver();
    RealApiServer server(empty_cluster());
    const auto kubeconfig = admin_kubeconfig(server);
    const std::vector<std::string> target{"--kubeconfig", kubeconfig, "--namespace", "default"};
    auto helm_at = [&](std::vector<std::string> args) {
        args.insert(args.end(), target.begin(), target.end());
        const auto r = helm(args);
        INFO("helm " << args[0] << ": " << r.out << r.err);
        REQUIRE(r.exit_code == 0);
        return r;
    };

    // The default values, as README's command: CRDs from crds/ first, the namespace before what
    // lives in it.
    const auto installed = helm_at({"install", "rdmanet", kChartDir});
    // NOTES.txt: how to follow the rollout and check a node, with the names of this release.
    CHECK(installed.out.find("kubectl -n rdmanet-system rollout status ds/rdmanet") != std::string::npos);
    CHECK(installed.out.find("--webhook-url=unix:///run/rdmanet/dranet.sock") != std::string::npos);
    auto ds = server.request("GET", "/apis/apps/v1/namespaces/rdmanet-system/daemonsets/rdmanet");
    REQUIRE(ds.status == 200);
    CHECK(ds.body["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm");
    CHECK(ds.body["spec"]["template"]["spec"]["containers"].size() == 3);
    CHECK(server.request("GET", "/apis/batch/v1/namespaces/rdmanet-system/cronjobs/rdmanet-reconcile").status == 200);
    for (const char* crd : {"ippools.whereabouts.cni.cncf.io", "nodeslicepools.whereabouts.cni.cncf.io",
                            "overlappingrangeipreservations.whereabouts.cni.cncf.io"})
        wait_established(server, crd);

    // Provider off, nv-ipam's CRDs on: the upgrade patches the DaemonSet and the role.
    helm_at({"upgrade", "rdmanet", kChartDir, "--set", "dranetProvider.enabled=false", "--set",
             "datastore.kubernetes.nvIpamCrds=true"});
    ds = server.request("GET", "/apis/apps/v1/namespaces/rdmanet-system/daemonsets/rdmanet");
    REQUIRE(ds.status == 200);
    CHECK(ds.body["spec"]["template"]["spec"]["containers"].size() == 2);
    auto role = server.request("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/rdmanet");
    REQUIRE(role.status == 200);
    for (const auto& rule : role.body["rules"]) CHECK(rule["apiGroups"][0] != "resource.k8s.io");
    wait_established(server, "cidrpools.nv-ipam.nvidia.com");

    // Uninstall: the workloads and RBAC go, the CRDs (and so every pool) stay.
    helm_at({"uninstall", "rdmanet"});
    CHECK(server.request("GET", "/apis/apps/v1/namespaces/rdmanet-system/daemonsets/rdmanet").status == 404);
    CHECK(server.request("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/rdmanet").status == 404);
    for (const char* crd :
         {"ippools.whereabouts.cni.cncf.io", "ippools.nv-ipam.nvidia.com", "cidrpools.nv-ipam.nvidia.com"}) {
        INFO(crd);
        CHECK(server.request("GET", std::string("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/") + crd)
                  .status == 200);
    }
}

TEST_CASE("helm: a cluster installed with kustomize moves to the chart (helm install --take-ownership)",
          "[helm][apiserver]") {
    require_real_apiserver();
    const auto base = kustomize_base();
    RealApiServer server(empty_cluster());
    // `kubectl apply -k deploy/`, as creates: CRDs (Established), the namespace, then the rest.
    for (const char* pass : {"CustomResourceDefinition", "Namespace", ""})
        for (const auto& o : base) {
            const std::string kind = o["kind"];
            const bool in_pass = *pass ? kind == pass : kind != "CustomResourceDefinition" && kind != "Namespace";
            if (!in_pass) continue;
            INFO("create " << key_of(o));
            auto r = server.request("POST", collection(o), o.dump());
            INFO(r.text);
            REQUIRE(r.status == 201);
            if (kind == "CustomResourceDefinition") wait_established(server, o["metadata"]["name"]);
        }
    const auto kubeconfig = admin_kubeconfig(server);
    const std::vector<std::string> install{"install",  "rdmanet",     kChartDir, "--kubeconfig",
                                           kubeconfig, "--namespace", "default"};
    // Without the flag Helm refuses objects it did not create (and changes nothing)...
    auto refused = helm(install);
    INFO(refused.out << refused.err);
    CHECK(refused.exit_code != 0);
    CHECK(refused.err.find("cannot be imported") != std::string::npos);
    // ...with it, it takes them over: the DaemonSet's selector is the base's, so the update is a
    // patch of the same object, not a recreation (a selector cannot change).
    auto adopt = install;
    adopt.push_back("--take-ownership");
    auto r = helm(adopt);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    auto ds = server.request("GET", "/apis/apps/v1/namespaces/rdmanet-system/daemonsets/rdmanet");
    REQUIRE(ds.status == 200);
    CHECK(ds.body["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm");
    CHECK(ds.body["metadata"]["annotations"]["meta.helm.sh/release-name"] == "rdmanet");
    CHECK(ds.body["metadata"]["generation"] == 1);  // the template did not change: same pods
    auto ns = server.request("GET", "/api/v1/namespaces/rdmanet-system");
    CHECK(ns.body["metadata"]["annotations"]["meta.helm.sh/release-name"] == "rdmanet");
}
