// Four rails in one pod through the DRANET door: four devices (veth pairs into a test pod
// namespace) of one claim and of separate claims, each answered by rdmanetctl dranet-provider,
// the answer applied to the pod the way DRANET's NRI hook applies it (addresses, link-scope routes
// before the others, routes with their table, rules, the two ARP sysctls a later DRANET applies),
// then real traffic: each rail's source address leaves through its own gateway and no other. Two
// rails in one subnet on one L2: which rail answers ARP, per DRANET release (1.4 has no ARP
// fields) and with the pod-wide sysctls that stand in for them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <memory>

#include "dranet_client.hpp"
#include "support/netns_fixture.hpp"
#include "support/process.hpp"
#include "test_ipam_plugin_util.hpp"

using namespace dranet_test;
using rdmanet::test::ScopedNetns;
using rdmanet::test::ScopedVeth;

namespace {

const std::string kRemote = "192.0.2.100";

rdmanet::test::ProcessResult in_ns(const ScopedNetns& ns, std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"ip", "netns", "exec", ns.name()});
    return rdmanet::test::run_process(argv, {}, "", std::chrono::seconds(20));
}

unsigned long rx_packets(const ScopedNetns& ns, const std::string& ifname) {
    auto r = in_ns(ns, {"cat", "/sys/class/net/" + ifname + "/statistics/rx_packets"});
    return r.exit_code == 0 ? std::stoul(r.out) : 0;
}

// What DRANET's NRI hook does with a NetworkConfig for interface `ifname` in the pod: addresses,
// the ARP sysctls, routes sorted by scope (link first) on the interface, then the rules.
void apply_like_dranet(const ScopedNetns& pod, const std::string& ifname, const json& config) {
    pod.ip({"link", "set", ifname, "up"});
    for (const auto& a : config["interface"].value("addresses", json::array()))
        pod.ip({"addr", "add", a.get<std::string>(), "dev", ifname});
    if (config["interface"].contains("arpIgnore"))
        REQUIRE(in_ns(pod, {"sysctl", "-w",
                            "net.ipv4.conf." + ifname +
                                ".arp_ignore=" + std::to_string(config["interface"]["arpIgnore"].get<int>())})
                    .exit_code == 0);
    if (config["interface"].contains("arpAnnounce"))
        REQUIRE(in_ns(pod, {"sysctl", "-w",
                            "net.ipv4.conf." + ifname +
                                ".arp_announce=" + std::to_string(config["interface"]["arpAnnounce"].get<int>())})
                    .exit_code == 0);
    std::vector<json> routes = config.value("routes", std::vector<json>{});
    std::stable_sort(routes.begin(), routes.end(),
                     [](const json& a, const json& b) { return a.value("scope", 0) > b.value("scope", 0); });
    for (const auto& r : routes) {
        std::vector<std::string> args{"route", "add", r["destination"].get<std::string>(), "dev", ifname};
        if (r.contains("gateway")) args.insert(args.end(), {"via", r["gateway"].get<std::string>()});
        if (r.contains("source")) args.insert(args.end(), {"src", r["source"].get<std::string>()});
        if (r.value("scope", 0) == 253) args.insert(args.end(), {"scope", "link"});
        if (r.contains("table")) args.insert(args.end(), {"table", std::to_string(r["table"].get<unsigned>())});
        pod.ip(args);
    }
    for (const auto& rule : config.value("rules", json::array())) {
        std::vector<std::string> args{"rule",  "add",
                                      "from",  rule["source"].get<std::string>(),
                                      "table", std::to_string(rule["table"].get<unsigned>())};
        if (rule.contains("priority"))
            args.insert(args.end(), {"priority", std::to_string(rule["priority"].get<unsigned>())});
        pod.ip(args);
    }
}

struct Rails {
    ScopedNetns pod{"pod"};
    ScopedNetns far{"far"};
    std::vector<std::unique_ptr<ScopedVeth>> links;
    Rails() {
        pod.ip({"link", "set", "lo", "up"});
        far.ip({"link", "set", "lo", "up"});
        far.ip({"addr", "add", kRemote + "/32", "dev", "lo"});
        for (int i = 0; i < 4; ++i) {
            links.push_back(std::make_unique<ScopedVeth>(&pod, &far, "dr"));
            const auto& v = *links.back();
            far.ip({"addr", "add", "10.7" + std::to_string(i) + ".0.1/24", "dev", v.name_b()});
            far.ip({"link", "set", v.name_b(), "up"});
        }
    }
};

void check_rails(const Rails& rails, const std::vector<json>& answers) {
    std::set<unsigned> tables;
    for (std::size_t i = 0; i < 4; ++i) {
        const auto& v = *rails.links[i];
        const std::string cidr = answers[i]["interface"]["addresses"][0];
        const std::string addr = cidr.substr(0, cidr.find('/'));
        CHECK(cidr.rfind("10.7" + std::to_string(i) + ".0.", 0) == 0);
        tables.insert(answers[i]["rules"][0]["table"].get<unsigned>());
        // The kernel's own choice for traffic from this rail's address: its interface, its gateway.
        const json route = json::parse(rails.pod.ip({"-j", "route", "get", kRemote, "from", addr}), nullptr, false);
        REQUIRE(route.is_array());
        CHECK(route[0].value("dev", "") == v.name_a());
        CHECK(route[0].value("gateway", "") == "10.7" + std::to_string(i) + ".0.1");
        // Real packets: 20 echoes from this address arrive on this rail's far end; the others see
        // at most the stray IPv6 router solicitations and MLD reports any link may carry.
        std::vector<unsigned long> before;
        for (const auto& l : rails.links) before.push_back(rx_packets(rails.far, l->name_b()));
        const auto ping = in_ns(rails.pod, {"ping", "-q", "-c", "20", "-i", "0.01", "-W", "2", "-I", addr, kRemote});
        INFO(ping.out << ping.err);
        CHECK(ping.exit_code == 0);
        for (std::size_t j = 0; j < 4; ++j) {
            const unsigned long got = rx_packets(rails.far, rails.links[j]->name_b()) - before[j];
            INFO("far end of rail " << j << " received " << got);
            if (j == i)
                CHECK(got >= 20);
            else
                CHECK(got < 10);
        }
    }
    CHECK(tables.size() == 4);
}

// Profiles rail0..rail3: rail i allocates from 10.7i.0.0/24 with gateway 10.7i.0.1.
void write_rail_profiles(ProviderProcess& p, const json& policy_routing) {
    for (int i = 0; i < 4; ++i)
        p.write_profile("rail" + std::to_string(i), {{"ipam",
                                                      {{"range", "10.7" + std::to_string(i) + ".0.0/24"},
                                                       {"gateway", "10.7" + std::to_string(i) + ".0.1"},
                                                       {"data_dir", p.data_dir()}}},
                                                     {"policyRouting", policy_routing}});
}

unsigned long tx_packets(const ScopedNetns& ns, const std::string& ifname) {
    auto r = in_ns(ns, {"cat", "/sys/class/net/" + ifname + "/statistics/tx_packets"});
    return r.exit_code == 0 ? std::stoul(r.out) : 0;
}

// Two rails of one pod in one subnet on one L2 (a bridge on the far side, 10.88.0.1 on it). The
// pod's IPv6 is off so that its interfaces send nothing but what ARP makes them send. `before`
// runs in the pod namespace before the rails arrive, as the runtime applies a pod's sysctls at
// the sandbox's creation, before DRANET moves the devices in.
struct SharedL2 {
    ScopedNetns pod{"pod"};
    ScopedNetns far{"far"};
    std::vector<std::unique_ptr<ScopedVeth>> links;
    explicit SharedL2(const std::function<void(const ScopedNetns&)>& before) {
        // rp_filter 0 whatever the host passes on to new namespaces: the owner's answer is the point.
        for (const char* key : {"net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1",
                                "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"})
            REQUIRE(in_ns(pod, {"sysctl", "-w", key}).exit_code == 0);
        before(pod);
        far.ip({"link", "add", "l2", "type", "bridge"});
        far.ip({"addr", "add", "10.88.0.1/24", "dev", "l2"});
        far.ip({"link", "set", "l2", "up"});
        for (int i = 0; i < 2; ++i) {
            links.push_back(std::make_unique<ScopedVeth>(&pod, &far, "dl"));
            far.ip({"link", "set", links.back()->name_b(), "master", "l2"});
            far.ip({"link", "set", links.back()->name_b(), "up"});
        }
    }
    // Broadcast ARP requests for `address` on the L2: how many frames each pod rail sent back.
    std::vector<unsigned long> answers_to(const std::string& address) const {
        std::vector<unsigned long> before;
        for (const auto& l : links) before.push_back(tx_packets(pod, l->name_a()));
        in_ns(far, {"arping", "-b", "-c", "3", "-w", "4", "-I", "l2", address});
        std::vector<unsigned long> sent;
        for (std::size_t i = 0; i < links.size(); ++i) sent.push_back(tx_packets(pod, links[i]->name_a()) - before[i]);
        return sent;
    }
};

// The provider's answers for both rails (one claim, two devices) of profile "flat", applied.
std::vector<std::string> attach_flat(ProviderProcess& p, const SharedL2& l2) {
    std::vector<std::string> addresses;
    for (const auto& link : l2.links) {
        const Reply r =
            http(p.socket(), "POST", "/GetProfileConfig",
                 profile_request(Device{link->name_a(), "", ""}, "c0ffee00-0000-4000-8000-0000000000f1", "flat"));
        REQUIRE(r.status == 200);
        apply_like_dranet(l2.pod, link->name_a(), r.j());
        const std::string cidr = r.j()["interface"]["addresses"][0];
        addresses.push_back(cidr.substr(0, cidr.find('/')));
    }
    return addresses;
}

}  // namespace

TEST_CASE(
    "dranet provider: two rails on one L2, ARP per DRANET release: flux with 1.4's answer alone, none with "
    "the pod-wide sysctls or with a later DRANET's answer",
    "[dranet][integration][rails]") {
    const json flat = {{"ipam", {{"range", "10.88.0.0/24"}, {"gateway", "10.88.0.1"}}}, {"policyRouting", true}};
    auto provider = [&](const std::string& version) {
        auto p = std::make_unique<ProviderProcess>("arp");
        json profile = flat;
        profile["ipam"]["data_dir"] = p->data_dir();
        p->write_profile("flat", profile);
        p->extra_args = {"--dranet-version", version};
        p->start();
        return p;
    };
    const auto nothing = [](const ScopedNetns&) {};
    SECTION("DRANET 1.4, nothing else: both rails answer for the second rail's address (ARP flux)") {
        auto p = provider("1.4");
        SharedL2 l2(nothing);
        const auto addresses = attach_flat(*p, l2);
        const auto sent = l2.answers_to(addresses[1]);
        INFO("rail 0 sent " << sent[0] << ", rail 1 sent " << sent[1]);
        CHECK(sent[1] >= 2);
        CHECK(sent[0] >= 1);  // the flux the provider's start log warns about
    }
    SECTION("DRANET 1.4 with the pod's net.ipv4.conf.all.arp_ignore=1/arp_announce=2: only the owner answers") {
        auto p = provider("1.4");
        SharedL2 l2([](const ScopedNetns& pod) {
            for (const char* key : {"net.ipv4.conf.all.arp_ignore=1", "net.ipv4.conf.all.arp_announce=2"})
                REQUIRE(in_ns(pod, {"sysctl", "-w", key}).exit_code == 0);
        });
        const auto addresses = attach_flat(*p, l2);
        // The rails arrived after the sysctls: their own values are 0, the pod-wide ones apply.
        CHECK(in_ns(l2.pod, {"cat", "/proc/sys/net/ipv4/conf/" + l2.links[0]->name_a() + "/arp_ignore"}).out == "0\n");
        for (int owner = 0; owner < 2; ++owner) {
            const auto sent = l2.answers_to(addresses[owner]);
            INFO("ARP for rail " << owner << ": rail 0 sent " << sent[0] << ", rail 1 sent " << sent[1]);
            CHECK(sent[owner] >= 2);
            CHECK(sent[1 - owner] == 0);
        }
    }
    SECTION("a DRANET with interface.arpIgnore (main): the answer alone keeps each rail to its address") {
        auto p = provider("main");
        SharedL2 l2(nothing);
        const auto addresses = attach_flat(*p, l2);
        const auto sent = l2.answers_to(addresses[1]);
        INFO("rail 0 sent " << sent[0] << ", rail 1 sent " << sent[1]);
        CHECK(sent[1] >= 2);
        CHECK(sent[0] == 0);
    }
}

TEST_CASE("dranet provider: four rails of one claim, applied as DRANET does, each leaves through its own gateway",
          "[dranet][integration][rails]") {
    ProviderProcess p("rails");
    write_rail_profiles(p, true);
    p.start();
    Rails rails;
    std::vector<json> answers;
    for (int i = 0; i < 4; ++i) {
        const std::string dev = rails.links[i]->name_a();
        const Reply r = http(
            p.socket(), "POST", "/GetProfileConfig",
            profile_request(Device{dev, "", ""}, "c0ffee00-0000-4000-8000-000000000001", "rail" + std::to_string(i)));
        REQUIRE(r.status == 200);
        answers.push_back(r.j());
        apply_like_dranet(rails.pod, dev, answers.back());
    }
    check_rails(rails, answers);
}

TEST_CASE("dranet provider: four claims of one device each end up in one pod, tables never collide",
          "[dranet][integration][rails]") {
    ProviderProcess p("claims");
    write_rail_profiles(p, {{"priority", 1000}});
    p.start();
    Rails rails;
    std::vector<json> answers;
    for (int i = 0; i < 4; ++i) {
        const std::string dev = rails.links[i]->name_a();
        const Reply r =
            http(p.socket(), "POST", "/GetProfileConfig",
                 profile_request(Device{dev, "", ""}, "c0ffee00-0000-4000-8000-00000000001" + std::to_string(i),
                                 "rail" + std::to_string(i)));
        REQUIRE(r.status == 200);
        CHECK(r.j()["rules"][0]["priority"] == 1000);
        answers.push_back(r.j());
        apply_like_dranet(rails.pod, dev, answers.back());
    }
    check_rails(rails, answers);
}
