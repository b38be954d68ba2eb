// Hostile input that reaches the kernel: an interface name with '%' (the kernel expands "net%d"
// to the first free net<N> when it creates or renames a device, so the pod's interface would not
// be the one reported), and IPAM routes the kernel would hold only one of. Each ADD is refused
// with the error JSON before anything is created; DEL afterwards succeeds and nothing is left.
#include <catch2/catch.hpp>

#include "e2e/e2e_helpers.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

constexpr int kInvalidEnv = 4;
constexpr int kInvalidConfig = 7;

void require_refused(const CniOutcome& r, int code, const std::string& mentions) {
    INFO(r.describe());
    CHECK(r.exit_code != 0);
    REQUIRE(r.stdout_is_json());
    CHECK(r.code() == code);
    CHECK((r.msg() + " " + r.details()).find(mentions) != std::string::npos);
}

void require_nothing_left(const Workspace& ws, const ScopedNetns& pod, const std::string& network) {
    CHECK(only_loopback(pod));
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations(network).empty());
}

}  // namespace

TEST_CASE("an interface name with '%' is refused before anything is created", "[e2e][bad-input][hostile]") {
    Workspace ws;
    ScopedNetns pod("pod");

    SECTION("macvlan") {
        ScopedVeth uplink(nullptr, nullptr, "pm");
        set_link_up(nullptr, uplink.name_a());
        set_link_up(nullptr, uplink.name_b());
        const auto conf =
            conflist("e2e-pct", "1.0.0", macvlan_plugin(uplink.name_a(), host_local(ws, "10.250.60.0/24")));
        const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id(), "net%d"};
        require_refused(att.add(), kInvalidEnv, "name template");
        require_nothing_left(ws, pod, "e2e-pct");
        CHECK(host_links_on(uplink.name_a()) == std::vector<std::string>{uplink.name_b()});

        // The runtime's DEL after the failed ADD: succeeds, finds nothing, leaves nothing.
        const auto del = att.del();
        INFO(del.describe());
        CHECK(del.ok());
        require_nothing_left(ws, pod, "e2e-pct");
        CHECK(host_links_on(uplink.name_a()) == std::vector<std::string>{uplink.name_b()});
    }

    SECTION("hostdev") {
        ScopedVeth dev(nullptr, nullptr, "ph");
        const std::string device = dev.name_a();
        set_link_up(nullptr, device);
        const auto conf = conflist("e2e-pcthd", "1.0.0", hostdev_plugin(device, host_local(ws, "10.250.61.0/24")));
        const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id(), "net%d"};
        require_refused(att.add(), kInvalidEnv, "name template");
        require_nothing_left(ws, pod, "e2e-pcthd");
        CHECK(find_link(nullptr, device));  // the device never left the host

        const auto del = att.del();
        INFO(del.describe());
        CHECK(del.ok());
        require_nothing_left(ws, pod, "e2e-pcthd");
        CHECK(find_link(nullptr, device));
    }
}

TEST_CASE("IPAM routes the kernel would hold only one of are refused before the pod gets anything",
          "[e2e][bad-input][hostile]") {
    Workspace ws;
    ScopedNetns pod("pod");
    ScopedVeth uplink(nullptr, nullptr, "pr");
    set_link_up(nullptr, uplink.name_a());
    set_link_up(nullptr, uplink.name_b());
    // Two gateways to one destination, same table and metric: the second add would fail with
    // EEXIST, and CHECK would then report it missing.
    const json routes = {{"routes", json::array({{{"dst", "10.99.0.0/16"}, {"gw", "10.250.62.2"}},
                                                 {{"dst", "10.99.0.0/16"}, {"gw", "10.250.62.3"}}})}};
    const auto conf =
        conflist("e2e-rt", "1.0.0", macvlan_plugin(uplink.name_a(), host_local(ws, "10.250.62.0/24", routes)));
    const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};
    require_refused(att.add(), kInvalidConfig,
                    "routes[1] (dst 10.99.0.0/16) has the destination, table and metric of routes[0]");
    require_nothing_left(ws, pod, "e2e-rt");
    CHECK(host_links_on(uplink.name_a()) == std::vector<std::string>{uplink.name_b()});

    // Two destinations, one gateway each: ADD installs both and CHECK finds both.
    const json metrics = {{"routes", json::array({{{"dst", "10.99.0.0/16"}, {"gw", "10.250.62.2"}},
                                                  {{"dst", "10.98.0.0/16"}, {"gw", "10.250.62.3"}}})}};
    const auto ok_conf =
        conflist("e2e-rt", "1.0.0", macvlan_plugin(uplink.name_a(), host_local(ws, "10.250.62.0/24", metrics)));
    const Attachment ok{ws, ws.write("ok.conflist", ok_conf.dump()), pod.path(), container_id()};
    const auto add = ok.add();
    INFO(add.describe());
    REQUIRE(add.ok());
    const auto check = ok.check();
    INFO(check.describe());
    CHECK(check.ok());
    CHECK(ok.del().ok());
    require_nothing_left(ws, pod, "e2e-rt");
}
