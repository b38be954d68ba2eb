// rdmanetctl render: network-operator kinds round-trip into NADs, the project's own kind, NADs
// themselves, --ipam rdmanet, and bad networks failing with the plugin's own message.
#include <catch2/catch.hpp>

#include <sstream>

#include "rdmanet/cni/translate/render.hpp"
#include "support/build_paths.hpp"

using namespace rdmanet::cni::translate;
using nlohmann::json;

namespace {

// A real-world InfiniBand network, as network-operator declares it (conf/networks/hostdevice-net.yaml).
const char* kHostDeviceNet = R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata:
  name: hostdevice-net
spec:
  networkNamespace: crater-workspace
  resourceName: hostdev
  ipam: |
    {
      "type": "whereabouts",
      "datastore": "kubernetes",
      "kubernetes": {"kubeconfig": "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig"},
      "range": "192.168.10.152/27",
      "exclude": ["192.168.10.151/32"],
      "log_file": "/var/log/whereabouts.log",
      "log_level": "info"
    }
)";

const json kHostDeviceIpam = json::parse(R"({
  "type": "whereabouts", "datastore": "kubernetes",
  "kubernetes": {"kubeconfig": "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig"},
  "range": "192.168.10.152/27", "exclude": ["192.168.10.151/32"],
  "log_file": "/var/log/whereabouts.log", "log_level": "info"})");

json render_one(const std::string& yaml, RenderOptions options = {}) {
    auto nads = render_documents(yaml, options);
    REQUIRE(nads.size() == 1);
    return nads.front();
}

json config_of(const json& nad) { return json::parse(nad.at("spec").at("config").get<std::string>()); }

std::string render_error(const std::string& yaml, RenderOptions options = {}) {
    try {
        render_documents(yaml, options);
    } catch (const std::exception& e) {
        return e.what();
    }
    FAIL("render succeeded, an error was expected");
    return "";
}

}  // namespace

TEST_CASE("render: HostDeviceNetwork round-trips into a NAD with its IPAM kept", "[ctl][render]") {
    const auto nad = render_one(kHostDeviceNet);
    CHECK(nad["apiVersion"] == "k8s.cni.cncf.io/v1");
    CHECK(nad["kind"] == "NetworkAttachmentDefinition");
    CHECK(nad["metadata"]["name"] == "hostdevice-net");
    CHECK(nad["metadata"]["namespace"] == "crater-workspace");
    // network-operator prefixes nvidia.com/ when the resource has no prefix of its own.
    CHECK(nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == "nvidia.com/hostdev");
    const auto config = config_of(nad);
    CHECK(config["cniVersion"] == "1.0.0");
    CHECK(config["name"] == "hostdevice-net");
    CHECK(config["type"] == "rdmanet");
    CHECK(config["mode"] == "hostdev");
    CHECK(config["ipam"] == kHostDeviceIpam);
    CHECK(config["capabilities"] == json({{"deviceID", true}, {"CNIDeviceInfoFile", true}}));
    CHECK_FALSE(config.contains("plugins"));
    CHECK_FALSE(config.contains("deviceID"));  // the validation placeholder is never rendered
}

TEST_CASE("render: --ipam rdmanet switches whereabouts to rdmanet-ipam, same keys", "[ctl][render]") {
    RenderOptions options;
    options.ipam = "rdmanet";
    const auto config = config_of(render_one(kHostDeviceNet, options));
    json expected = kHostDeviceIpam;
    expected["type"] = "rdmanet-ipam";
    expected["kubernetes"]["kubeconfig"] = "/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig";
    expected["log_file"] = "/var/log/rdmanet/whereabouts.log";  // the node policy's log dir
    CHECK(config["ipam"] == expected);

    options.ipam_kubeconfig = "/etc/cni/net.d/custom/kc";
    CHECK(config_of(render_one(kHostDeviceNet, options))["ipam"]["kubernetes"]["kubeconfig"] ==
          "/etc/cni/net.d/custom/kc");
}

TEST_CASE("render: --ipam rdmanet refuses to convert an IPAM that is neither whereabouts nor nv-ipam",
          "[ctl][render]") {
    RenderOptions options;
    options.ipam = "rdmanet";
    auto message = render_error(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: hl}
spec: {resourceName: hostdev, ipam: '{"type":"host-local","subnet":"10.1.0.0/24"}'}
)",
                                options);
    CHECK_THAT(message, Catch::Contains("\"host-local\"") && Catch::Contains("drop --ipam"));
    // Without the flag the operator's IPAM is kept as written.
    auto nad = render_one(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: nv}
spec: {resourceName: hostdev, ipam: '{"type":"nv-ipam","poolName":"pool1"}'}
)");
    CHECK(config_of(nad)["ipam"] == json({{"type", "nv-ipam"}, {"poolName", "pool1"}}));
    CHECK(nad["metadata"]["namespace"] == "default");
}

// network-operator's current CRs with nv-ipam, and nv-ipam's IPPool as `kubectl get -o yaml` prints it.
const char* kNvIpamNetwork = R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: rdma-a}
spec: {networkNamespace: ai, resourceName: hostdev, ipam: '{"type":"nv-ipam","poolName":"pool1"}'}
)";
const char* kNvIpamPool = R"(
apiVersion: v1
kind: List
items:
- apiVersion: nv-ipam.nvidia.com/v1alpha1
  kind: IPPool
  metadata: {name: pool1, namespace: kube-system}
  spec:
    subnet: 192.168.0.0/16
    perNodeBlockSize: 100
    gateway: 192.168.0.1
    defaultGateway: true
    exclusions:
    - {startIP: 192.168.0.10, endIP: 192.168.0.20}
    routes:
    - {dst: 10.200.0.0/16}
)";

TEST_CASE("render: --ipam rdmanet keeps nv-ipam's pools, switching the type only", "[ctl][render]") {
    RenderOptions options;
    options.ipam = "rdmanet";
    const auto nads = render_documents(std::string(kNvIpamNetwork) + "---\n" + kNvIpamPool + R"(
---
apiVersion: mellanox.com/v1alpha1
kind: MacvlanNetwork
metadata: {name: rail1}
spec: {networkNamespace: ai, master: eth1, mode: bridge, mtu: 9000,
       ipam: '{"type":"nv-ipam","poolName":"rail1-v4,rail1-v6","poolType":"cidrpool","daemonSocket":"unix:///var/lib/cni/nv-ipam/daemon.sock","daemonCallTimeoutSeconds":5}'}
)",
                                       options);
    REQUIRE(nads.size() == 2);
    CHECK(config_of(nads[0])["ipam"] == json::parse(R"({"type": "rdmanet-ipam", "poolName": "pool1",
      "kubernetes": {"kubeconfig": "/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig"}})"));
    CHECK(config_of(nads[1])["ipam"] == json::parse(R"({"type": "rdmanet-ipam", "poolName": "rail1-v4,rail1-v6",
      "poolType": "cidrpool", "kubernetes": {"kubeconfig": "/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig"}})"));
    CHECK(nads[1]["metadata"]["namespace"] == "ai");
}

TEST_CASE("render: --ipam rdmanet converts nv-ipam and its IPPool to rdmanet-ipam with node slices", "[ctl][render]") {
    RenderOptions options;
    options.ipam = "rdmanet";
    options.nv_ipam_to_slices = true;
    const auto nads = render_documents(std::string(kNvIpamNetwork) + "---\n" + kNvIpamPool, options);
    REQUIRE(nads.size() == 1);  // the IPPool is an input, not a network
    const auto ipam = config_of(nads.front())["ipam"];
    CHECK(ipam == json::parse(R"({
      "type": "rdmanet-ipam", "datastore": "kubernetes",
      "kubernetes": {"kubeconfig": "/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig"},
      "range": "192.168.0.0/16",
      "node_slice_size": "/25",
      "network_name": "pool1",
      "gateway": "192.168.0.1",
      "exclude": ["192.168.0.10/31", "192.168.0.12/30", "192.168.0.16/30", "192.168.0.20/32"],
      "routes": [{"dst": "10.200.0.0/16"}, {"dst": "0.0.0.0/0"}]})"));
}

TEST_CASE("render: nv-ipam conversion refuses what rdmanet-ipam cannot express", "[ctl][render]") {
    RenderOptions options;
    options.ipam = "rdmanet";
    options.nv_ipam_to_slices = true;
    const std::string network = kNvIpamNetwork;
    const auto with_pool = [&](const std::string& spec) {
        return render_error(network +
                                "---\napiVersion: nv-ipam.nvidia.com/v1alpha1\nkind: IPPool\n"
                                "metadata: {name: pool1}\nspec: " +
                                spec + "\n",
                            options);
    };
    CHECK_THAT(render_error(network, options), Catch::Contains("IPPool \"pool1\" is not in the input") &&
                                                   Catch::Contains("kubectl get ippools.nv-ipam.nvidia.com pool1"));
    CHECK_THAT(
        with_pool("{subnet: 10.0.0.0/24, perNodeBlockSize: 16, perNodeExclusions: [{startIndex: 0, endIndex: 1}]}"),
        Catch::Contains("perNodeExclusions has no rdmanet equivalent"));
    CHECK_THAT(with_pool("{subnet: 10.0.0.0/24, perNodeBlockSize: 1000}"), Catch::Contains("larger than the subnet"));
    CHECK_THAT(with_pool("{subnet: 10.0.0.0/33, perNodeBlockSize: 16}"), Catch::Contains("is not a CIDR"));
    CHECK_THAT(with_pool("{subnet: 10.0.0.0/24, perNodeBlockSize: 16, defaultGateway: true}"),
               Catch::Contains("defaultGateway needs spec.gateway"));
    CHECK_THAT(with_pool("{subnet: 10.0.0.0/24, perNodeBlockSize: 16, gateway: 10.0.1.1}"), Catch::Contains("outside"));
    CHECK_THAT(render_error(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: two}
spec: {resourceName: hostdev, ipam: '{"type":"nv-ipam","poolName":"pool1,pool2"}'}
)",
                            options),
               Catch::Contains("names two pools"));
    CHECK_THAT(render_error(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: cidr}
spec: {resourceName: hostdev, ipam: '{"type":"nv-ipam","poolName":"pool1","poolType":"cidrpool"}'}
)",
                            options),
               Catch::Contains("only IPPool pools convert"));
}

TEST_CASE("render: nv-ipam IPv6 pool, block size a power of two, poolName defaulting to the network", "[ctl][render]") {
    RenderOptions options;
    options.ipam = "rdmanet";
    options.nv_ipam_to_slices = true;
    const auto nads = render_documents(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: v6net}
spec: {resourceName: hostdev, ipam: '{"type":"nv-ipam"}'}
---
apiVersion: nv-ipam.nvidia.com/v1alpha1
kind: IPPool
metadata: {name: v6net}
spec: {subnet: "fd00:10::/64", perNodeBlockSize: 256, exclusions: [{startIP: "fd00:10::", endIP: "fd00:10::ff"}]}
)",
                                       options);
    const auto ipam = config_of(nads.front())["ipam"];
    CHECK(ipam["range"] == "fd00:10::/64");
    CHECK(ipam["node_slice_size"] == "/120");
    CHECK(ipam["network_name"] == "v6net");
    CHECK(ipam["exclude"] == json::array({"fd00:10::/120"}));
    CHECK_FALSE(ipam.contains("gateway"));
    CHECK_FALSE(ipam.contains("routes"));
}

TEST_CASE("render: MacvlanNetwork round-trips master, mode and mtu", "[ctl][render]") {
    const auto nad = render_one(R"(
apiVersion: mellanox.com/v1alpha1
kind: MacvlanNetwork
metadata: {name: roce-macvlan}
spec:
  networkNamespace: ml
  master: ens2f0np0
  mode: private
  mtu: 9000
  ipam: '{"type": "whereabouts", "range": "192.168.2.225/28"}'
)");
    const auto config = config_of(nad);
    CHECK(config["mode"] == "macvlan");
    CHECK(config["master"] == "ens2f0np0");
    CHECK(config["macvlanMode"] == "private");
    CHECK(config["mtu"] == 9000);
    CHECK(config["ipam"] == json({{"type", "whereabouts"}, {"range", "192.168.2.225/28"}}));
    CHECK_FALSE(nad["metadata"].contains("annotations"));
    CHECK_FALSE(config.contains("capabilities"));
}

TEST_CASE("render: a MacvlanNetwork without master fails with the plugin's message", "[ctl][render]") {
    auto message = render_error(R"(
apiVersion: mellanox.com/v1alpha1
kind: MacvlanNetwork
metadata: {name: nomaster}
spec: {mode: bridge, ipam: '{"type":"whereabouts","range":"10.0.0.0/24"}'}
)");
    CHECK_THAT(message, Catch::Contains("MacvlanNetwork nomaster"));
    CHECK_THAT(message, Catch::Contains("master"));
    CHECK_THAT(message, Catch::Contains("is required in macvlan mode"));
    CHECK_THAT(render_error(R"(
apiVersion: mellanox.com/v1alpha1
kind: MacvlanNetwork
metadata: {name: badmode}
spec: {master: ens1f0, mode: bogus}
)"),
               Catch::Contains("macvlanMode"));
}

TEST_CASE("render: IPoIBNetwork round-trips master", "[ctl][render]") {
    const auto nad = render_one(R"(
apiVersion: mellanox.com/v1alpha1
kind: IPoIBNetwork
metadata: {name: ib-ipoib}
spec:
  master: ibp4s0
  ipam: |
    {"type": "whereabouts", "range": "192.168.6.0/24"}
)");
    const auto config = config_of(nad);
    CHECK(config["mode"] == "ipoib");
    CHECK(config["master"] == "ibp4s0");
    CHECK(config["ipam"]["range"] == "192.168.6.0/24");
    CHECK(nad["metadata"]["namespace"] == "default");
    CHECK_FALSE(nad["metadata"].contains("annotations"));
    CHECK_THAT(render_error("apiVersion: mellanox.com/v1alpha1\nkind: IPoIBNetwork\nmetadata: {name: x}\nspec: {}\n"),
               Catch::Contains("is required in ipoib mode"));
}

TEST_CASE("render: metaPlugins make a conflist, string or list form", "[ctl][render]") {
    const auto config = config_of(render_one(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: chained}
spec:
  resourceName: example.com/dev
  metaPlugins: '{"type": "tuning", "mtu": 4000}, {"type": "rdma"}'
)"));
    REQUIRE(config["plugins"].size() == 3);
    CHECK(config["cniVersion"] == "1.0.0");
    CHECK(config["name"] == "chained");
    CHECK(config["plugins"][0]["type"] == "rdmanet");
    CHECK(config["plugins"][0]["mode"] == "hostdev");
    CHECK_FALSE(config["plugins"][0].contains("cniVersion"));
    CHECK(config["plugins"][1] == json({{"type", "tuning"}, {"mtu", 4000}}));
    CHECK(config["plugins"][2]["type"] == "rdma");

    CHECK_THAT(render_error(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: chained}
spec: {resourceName: hostdev, metaPlugins: '{"mtu": 4000}'}
)"),
               Catch::Contains("metaPlugins"));
}

TEST_CASE("render: the project's own kind passes plugin keys through to the plugin's parser", "[ctl][render]") {
    const auto nad = render_one(R"(
apiVersion: rdmanet.dev/v1alpha1
kind: RdmaNetwork
metadata: {name: roce-sriov}
spec:
  networkNamespace: ml
  resourceName: nvidia.com/sriov_rdma_vf
  mode: sriov
  vlan: 200
  spoofchk: "on"
  rdma: {isolation: required}
  ipam: {type: rdmanet-ipam, range: 10.61.0.0/16}
)");
    CHECK(nad["metadata"]["namespace"] == "ml");
    CHECK(nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == "nvidia.com/sriov_rdma_vf");
    const auto config = config_of(nad);
    CHECK(config["mode"] == "sriov");
    CHECK(config["vlan"] == 200);
    CHECK(config["spoofchk"] == "on");
    CHECK(config["rdma"] == json({{"isolation", "required"}}));
    CHECK(config["ipam"] == json({{"type", "rdmanet-ipam"}, {"range", "10.61.0.0/16"}}));
    CHECK_FALSE(config.contains("networkNamespace"));
    CHECK_FALSE(config.contains("resourceName"));
}

TEST_CASE("render: bad networks fail at render time with the plugin's message", "[ctl][render]") {
    const std::string head = "apiVersion: rdmanet.dev/v1alpha1\nkind: RdmaNetwork\nmetadata: {name: bad}\n";
    // Plugin key errors.
    CHECK_THAT(render_error(head + "spec: {resourceName: a.b/c, mode: sriov, vlan: 5000}\n"), Catch::Contains("vlan"));
    CHECK_THAT(render_error(head + "spec: {mode: tunnel}\n"), Catch::Contains("\"tunnel\" is not supported"));
    CHECK_THAT(render_error(head + "spec: {mode: macvlan, master: ens1f0, rdma: {isolation: always}}\n"),
               Catch::Contains("isolation"));
    // hostdev without a resource (so Multus passes no deviceID) and without a device.
    CHECK_THAT(render_error(head + "spec: {mode: hostdev}\n"), Catch::Contains("hostdev mode needs a device"));
    // IPAM errors come from the IPAM's parser, naming the field.
    CHECK_THAT(render_error(head + "spec: {mode: macvlan, master: e1, ipam: {type: rdmanet-ipam, range: 10.0.0.0/24, "
                                   "range_start: 10.0.1.5}}\n"),
               Catch::Contains("range_start"));
    // Paths outside what the default node policy allows.
    CHECK_THAT(render_error(head + "spec: {mode: macvlan, master: e1, logFile: /tmp/x.log}\n"),
               Catch::Contains("/var/log/rdmanet"));
    CHECK_THAT(render_error(head + "spec: {mode: macvlan, master: e1, ipam: {type: rdmanet-ipam, range: 10.0.0.0/24, "
                                   "datastore: kubernetes, kubernetes: {kubeconfig: /root/.kube/config}}}\n"),
               Catch::Contains("kubeconfig"));
    // Shape errors of the spec itself.
    CHECK_THAT(render_error(head + "spec: {mode: hostdev, resourceName: hostdev}\n"),
               Catch::Contains("device plugin prefix"));
    CHECK_THAT(render_error("apiVersion: rdmanet.dev/v1alpha1\nkind: RdmaNetwork\nmetadata: {name: Bad_Name}\n"
                            "spec: {mode: macvlan, master: e1}\n"),
               Catch::Contains("DNS-1123"));
    CHECK_THAT(render_error("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"),
               Catch::Contains("unsupported kind \"ConfigMap\""));
    CHECK_THAT(render_error("apiVersion: mellanox.com/v1alpha1\nkind: HostDeviceNetwork\nmetadata: {name: x}\n"
                            "spec: {resourceName: hostdev, ipam: 'not json'}\n"),
               Catch::Contains("spec.ipam is not a JSON object"));
    CHECK_THAT(render_error("key: [unclosed\n"), Catch::Contains("not valid YAML"));
}

TEST_CASE("render: an existing NAD is validated and converted", "[ctl][render]") {
    const std::string nad_yaml_text = R"(
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: old
  namespace: ml
  annotations: {k8s.v1.cni.cncf.io/resourceName: nvidia.com/hostdev}
spec:
  config: '{"cniVersion":"0.3.1","name":"old","plugins":[{"type":"rdmanet","mode":"hostdev","ipam":{"type":"whereabouts","range":"10.9.0.0/24"}}]}'
)";
    RenderOptions options;
    options.ipam = "rdmanet";
    const auto nad = render_one(nad_yaml_text, options);
    const auto config = config_of(nad);
    CHECK(config["plugins"][0]["ipam"]["type"] == "rdmanet-ipam");
    CHECK(config["cniVersion"] == "0.3.1");
    CHECK(nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == "nvidia.com/hostdev");

    CHECK_THAT(render_error(R"(
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: other}
spec: {config: '{"cniVersion":"1.0.0","name":"other","type":"host-device"}'}
)"),
               Catch::Contains("no plugin of type \"rdmanet\""));
}

TEST_CASE("render: YAML output reads back as the same NAD", "[ctl][render]") {
    const auto nad = render_one(kHostDeviceNet);
    const auto text = nad_yaml(nad);
    CHECK_THAT(text, Catch::StartsWith("apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\n"));
    CHECK_THAT(text, Catch::Contains("config: |"));
    const auto back = yaml_to_json(text);
    CHECK(back["metadata"] == nad["metadata"]);
    CHECK(config_of(back) == config_of(nad));
}

TEST_CASE("render: YAML scalars are typed like Kubernetes types them", "[ctl][render]") {
    const auto j = yaml_to_json(
        "a: true\nb: 'true'\nc: 0000:af:06.0\nd: 9000\ne: \"9000\"\nf: ~\ng: -3\nh: 1.5\n"
        "i: 0x10\nj: [1, two]\n");
    CHECK(j["a"] == true);
    CHECK(j["b"] == "true");
    CHECK(j["c"] == "0000:af:06.0");
    CHECK(j["d"] == 9000);
    CHECK(j["e"] == "9000");
    CHECK(j["f"].is_null());
    CHECK(j["g"] == -3);
    CHECK(j["h"] == 1.5);
    CHECK(j["i"] == "0x10");
    CHECK(j["j"] == json({1, "two"}));
}

TEST_CASE("render: several documents and kubectl Lists", "[ctl][render]") {
    std::string two =
        std::string(kHostDeviceNet) + "---\n" +
        "apiVersion: mellanox.com/v1alpha1\nkind: IPoIBNetwork\nmetadata: {name: ib}\nspec: {master: ib0}\n";
    CHECK(render_documents(two, {}).size() == 2);
    auto list = render_documents(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: mellanox.com/v1alpha1\n  kind: IPoIBNetwork\n"
        "  metadata: {name: ib}\n  spec: {master: ib0}\n",
        {});
    REQUIRE(list.size() == 1);
    CHECK(list[0]["metadata"]["name"] == "ib");
}

TEST_CASE("render: the command prints YAML or JSON, errors on stderr with exit 1", "[ctl][render]") {
    std::ostringstream out, err;
    RenderOptions options;
    options.output = "json";
    CHECK(render(rdmanet::test::source_dir() + "/conf/networks/hostdevice-net.yaml", options, out, err) == 0);
    CHECK(err.str().empty());
    CHECK(json::parse(out.str())["metadata"]["name"] == "hostdevice-net");

    std::ostringstream out2, err2;
    CHECK(render("/nonexistent/net.yaml", {}, out2, err2) == 1);
    CHECK(out2.str().empty());
    CHECK_THAT(err2.str(), Catch::StartsWith("rdmanetctl render: cannot read /nonexistent/net.yaml"));
}

// network-operator (2026) chains sbr and tuning after the device plugin through metaPlugins, a
// string its template pastes into the plugins list: objects separated by commas, no brackets.
TEST_CASE("render: metaPlugins sbr and tuning fold into policyRouting and sysctl", "[ctl][render][rails]") {
    const auto nad = render_one(R"(
apiVersion: mellanox.com/v1alpha1
kind: MacvlanNetwork
metadata:
  name: rail-3
spec:
  networkNamespace: training
  master: ens3f0np0
  mode: bridge
  mtu: 9000
  ipam: '{"type": "nv-ipam", "poolName": "rail-3"}'
  metaPlugins: |
    {"type": "sbr"},
    {"type": "tuning", "sysctl": {"net.ipv4.conf.IFNAME.arp_ignore": "1",
                                  "net.ipv4.conf.IFNAME.arp_announce": "2",
                                  "net.ipv4.conf.IFNAME.rp_filter": "0"}}
)");
    const auto config = config_of(nad);
    // One plugin, not a conflist: nothing is left to chain.
    CHECK_FALSE(config.contains("plugins"));
    CHECK(config["type"] == "rdmanet");
    CHECK(config["mode"] == "macvlan");
    CHECK(config["master"] == "ens3f0np0");
    CHECK(config["policyRouting"] == true);
    CHECK(config["sysctl"] == json({{"net.ipv4.conf.IFNAME.arp_ignore", "1"},
                                    {"net.ipv4.conf.IFNAME.arp_announce", "2"},
                                    {"net.ipv4.conf.IFNAME.rp_filter", "0"}}));
    CHECK(config["ipam"] == json({{"type", "nv-ipam"}, {"poolName", "rail-3"}}));
    CHECK(nad["metadata"]["namespace"] == "training");
}

TEST_CASE("render: sbr with a table, unmappable and other meta plugins stay chained", "[ctl][render][rails]") {
    const auto config = config_of(render_one(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: rail-0}
spec:
  resourceName: hostdev-rail0
  ipam: '{"type": "whereabouts", "range": "192.168.50.0/24"}'
  metaPlugins: '{"type":"sbr","table":101}, {"type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.arp_ignore":"1"}}, {"type":"bandwidth","ingressRate":1000,"ingressBurst":100}'
)"));
    // sbr's fixed table means rules only (no route moved): not rdmanet's policyRouting.table.
    REQUIRE(config["plugins"].size() == 3);
    const auto& rdmanet = config["plugins"][0];
    CHECK(rdmanet["type"] == "rdmanet");
    CHECK_FALSE(rdmanet.contains("policyRouting"));
    CHECK(rdmanet["sysctl"] == json({{"net.ipv4.conf.IFNAME.arp_ignore", "1"}}));
    CHECK(config["plugins"][1] == json({{"type", "sbr"}, {"table", 101}}));
    CHECK(config["plugins"][2]["type"] == "bandwidth");

    // A bracketed list in the string is accepted too; a tuning that also sets the MTU and an sbr
    // with gateways cannot fold without changing the network: chained as written.
    const auto kept = config_of(render_one(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: rail-1}
spec:
  resourceName: hostdev-rail1
  metaPlugins: '[{"type":"tuning","mtu":4000,"sysctl":{"net.ipv4.conf.IFNAME.arp_ignore":"1"}},{"type":"sbr","gateways":["10.0.0.1"]}]'
)"));
    REQUIRE(kept["plugins"].size() == 3);
    CHECK_FALSE(kept["plugins"][0].contains("sysctl"));
    CHECK_FALSE(kept["plugins"][0].contains("policyRouting"));
    CHECK(kept["plugins"][1]["mtu"] == 4000);
    CHECK(kept["plugins"][2]["gateways"] == json::array({"10.0.0.1"}));

    CHECK_THAT(render_error(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: rail-2}
spec: {resourceName: hostdev, metaPlugins: '{"type":"tuning","sysctl":["net.ipv4.conf.IFNAME.arp_ignore"]}'}
)"),
               Catch::Contains("sysctl"));
}

// tuning takes any key under /proc/sys/net (its README's example is net.core.somaxconn); rdmanet's
// "sysctl" only the interface's own: such a tuning stays chained as written, render never fails.
TEST_CASE("render: a tuning with a sysctl rdmanet does not set stays chained as written", "[ctl][render][rails]") {
    const auto config = config_of(render_one(R"(
apiVersion: mellanox.com/v1alpha1
kind: MacvlanNetwork
metadata: {name: rail-5}
spec:
  master: ens3f0np0
  ipam: '{"type": "whereabouts", "range": "192.168.55.0/24"}'
  metaPlugins: '{"type":"sbr"}, {"type":"tuning","sysctl":{"net.core.somaxconn":"500","net.ipv4.conf.IFNAME.arp_ignore":"1"}}'
)"));
    REQUIRE(config["plugins"].size() == 2);
    CHECK(config["plugins"][0]["policyRouting"] == true);
    CHECK_FALSE(config["plugins"][0].contains("sysctl"));
    CHECK(config["plugins"][1] ==
          json({{"type", "tuning"},
                {"sysctl", {{"net.core.somaxconn", "500"}, {"net.ipv4.conf.IFNAME.arp_ignore", "1"}}}}));
}
