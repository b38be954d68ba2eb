// The plugin with its embedded IPAM ("ipam": {"type": "rdmanet-ipam", ...}, called in-process)
// through the real caller: macvlan ADD -> CHECK -> DEL, two pods with distinct addresses pinging
// each other, and the local store (seen through bin/rdmanetctl) empty again after DEL.
#include <catch2/catch.hpp>

#include "e2e/e2e_helpers.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

struct Uplink {
    ScopedVeth veth{nullptr, nullptr, "eu"};
    Uplink() {
        set_link_up(nullptr, veth.name_a());
        set_link_up(nullptr, veth.name_b());
    }
    const std::string& master() const { return veth.name_a(); }
};

// libcni call with the pod identity in CNI_ARGS, as kubelet/Multus pass it.
CniOutcome call(const Workspace& ws, const std::string& verb, const std::string& conflist_path, const ScopedNetns& pod,
                const std::string& id, const std::string& pod_name) {
    DriverRequest req;
    req.verb = verb;
    req.conflist = conflist_path;
    req.netns = pod.path();
    req.container_id = id;
    req.args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=" + pod_name;
    req.cache_dir = ws.cache_dir();
    return run_driver(req, ws.env());
}

}  // namespace

TEST_CASE("macvlan with the embedded IPAM: ADD, CHECK, DEL, two pods ping, the pool empties", "[e2e][macvlan][ipam]") {
    Workspace ws;
    Uplink uplink;
    ScopedNetns pod1("ei1"), pod2("ei2");
    const auto conf = conflist("e2e-embipam", "1.0.0",
                               macvlan_plugin(uplink.master(), embedded_ipam(ws, "10.250.40.0/24", "10.250.40.1")));
    const auto file = ws.write("net.conflist", conf.dump());
    const std::string id1 = container_id("ei1"), id2 = container_id("ei2");

    const auto r1 = call(ws, "add", file, pod1, id1, "pod-one");
    INFO(r1.describe());
    REQUIRE(r1.ok());
    const auto r2 = call(ws, "add", file, pod2, id2, "pod-two");
    INFO(r2.describe());
    REQUIRE(r2.ok());

    // Full plugin result: the interface plus the embedded IPAM's addresses (lowest first, the
    // gateway never handed out).
    REQUIRE(r1.json["interfaces"].size() == 1);
    REQUIRE(r1.json["ips"].size() == 1);
    CHECK(r1.json["ips"][0].value("address", "") == "10.250.40.2/24");
    CHECK(r1.json["ips"][0].value("gateway", "") == "10.250.40.1");
    CHECK(r1.json["ips"][0].value("interface", -1) == 0);
    CHECK(r2.json["ips"][0].value("address", "") == "10.250.40.3/24");
    CHECK(ipv4_addresses(pod1, "net1") == std::vector<std::string>{"10.250.40.2/24"});
    CHECK(ipv4_addresses(pod2, "net1") == std::vector<std::string>{"10.250.40.3/24"});

    // The store holds both, in whereabouts' IPPool shape.
    auto p = embedded_pools(ws);
    REQUIRE(p.size() == 1);
    CHECK(p[0]["metadata"]["name"] == "10.250.40.0-24");
    CHECK(p[0]["spec"]["allocations"] == json({{"2", {{"id", id1}, {"podref", "e2e/pod-one"}, {"ifname", "net1"}}},
                                               {"3", {{"id", id2}, {"podref", "e2e/pod-two"}, {"ifname", "net1"}}}}));

    const auto c1 = call(ws, "check", file, pod1, id1, "pod-one");
    INFO(c1.describe());
    CHECK(c1.ok());
    const auto c2 = call(ws, "check", file, pod2, id2, "pod-two");
    INFO(c2.describe());
    CHECK(c2.ok());

    CHECK(pod_ping(pod1, "10.250.40.3"));
    CHECK(pod_ping(pod2, "10.250.40.2"));

    const auto d1 = call(ws, "del", file, pod1, id1, "pod-one");
    INFO(d1.describe());
    CHECK(d1.ok());
    // pod2's address survives pod1's DEL.
    p = embedded_pools(ws);
    REQUIRE(p.size() == 1);
    CHECK(p[0]["spec"]["allocations"].size() == 1);
    CHECK(p[0]["spec"]["allocations"].contains("3"));

    const auto d2 = call(ws, "del", file, pod2, id2, "pod-two");
    INFO(d2.describe());
    CHECK(d2.ok());
    CHECK(only_loopback(pod1));
    CHECK(only_loopback(pod2));
    CHECK(ws.state_files().empty());
    p = embedded_pools(ws);
    REQUIRE(p.size() == 1);
    CHECK(p[0]["spec"]["allocations"].empty());

    // A second DEL (the runtime retries) is still fine.
    const auto again = call(ws, "del", file, pod1, id1, "pod-one");
    INFO(again.describe());
    CHECK(again.ok());

    const auto verify =
        run_process({bin_dir() + "/rdmanetctl", "pool", "verify", "--data-dir", ws.path("rdmanet-ipam")});
    INFO(verify.out << verify.err);
    CHECK(verify.exit_code == 0);
}
