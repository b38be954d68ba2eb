// rdmanetctl dranet-provider as DRANET drives it: a real process on a unix socket, requests in
// DRANET's wire, the local datastore. Idempotency per (claim, device), release twice, concurrent
// claims, static conflicts, every kind of bad request (the provider keeps serving after each), a
// slow client, the socket's protections.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <set>
#include <thread>

#include "dranet_client.hpp"
#include "test_ipam_plugin_util.hpp"

using namespace dranet_test;

namespace {

json rail_profile(const ProviderProcess& p, const std::string& range, const std::string& gateway) {
    return {{"ipam", {{"range", range}, {"gateway", gateway}, {"data_dir", p.data_dir()}}}, {"policyRouting", true}};
}

Reply get(const ProviderProcess& p, const Device& d, const std::string& claim, const std::string& profile,
          const std::vector<std::string>& addresses = {}) {
    return http(p.socket(), "POST", "/GetProfileConfig", profile_request(d, claim, profile, addresses));
}

Reply release(const ProviderProcess& p, const Device& d, const std::string& claim, const std::string& profile) {
    return http(p.socket(), "POST", "/ReleaseProfileConfig", profile_request(d, claim, profile));
}

void still_serving(ProviderProcess& p) {
    REQUIRE(p.running());
    const Reply h = http(p.socket(), "GET", "/health");
    REQUIRE(h.status == 200);
    CHECK(h.j() == json::parse(R"({"cloudProvider":false,"profileProvider":true})"));
}

const std::string kClaim = "0b6c9d1e-2f3a-4b5c-8d7e-9f0a1b2c3d4e";

}  // namespace

TEST_CASE("dranet provider: health, an address per (claim, device), the same on a repeat, release twice",
          "[dranet][integration]") {
    ProviderProcess p("basic");
    p.write_profile("rail", rail_profile(p, "10.61.0.0/24", "10.61.0.1"));
    p.start();
    still_serving(p);

    struct stat st {};
    REQUIRE(::stat(p.socket().c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(::stat((p.dir() + "/run").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);

    const Device eth1{"eth1", "0000:3b:00.1", "aa:bb:cc:00:00:01"};
    const Reply first = get(p, eth1, kClaim, "rail");
    REQUIRE(first.status == 200);
    const json a = first.j();
    REQUIRE(a["interface"]["addresses"].size() == 1);
    const std::string address = a["interface"]["addresses"][0];
    CHECK(address.rfind("10.61.0.", 0) == 0);
    // Without --dranet-version the provider answers DRANET 1.4, which has no ARP fields.
    CHECK(a["interface"] == json({{"addresses", {address}}}));
    const unsigned table = a["rules"][0]["table"];
    CHECK(a["rules"][0]["source"] == address.substr(0, address.find('/')) + "/32");
    CHECK(a["routes"][1] == json({{"destination", "0.0.0.0/0"}, {"gateway", "10.61.0.1"}, {"table", table}}));

    // The kubelet retries: same answer, nothing new allocated.
    const Reply again = get(p, eth1, kClaim, "rail");
    REQUIRE(again.status == 200);
    CHECK(again.j() == a);
    // The same claim's second device: another address, another table.
    const Reply second = get(p, Device{"eth2", "", ""}, kClaim, "rail");
    REQUIRE(second.status == 200);
    CHECK(second.j()["interface"]["addresses"][0] != address);
    CHECK(second.j()["rules"][0]["table"] != table);

    // Released (twice: DRANET may, and must get 200 both times); the address is free again.
    CHECK(release(p, eth1, kClaim, "rail").status == 200);
    CHECK(release(p, eth1, kClaim, "rail").status == 200);
    CHECK(release(p, Device{"eth9", "", ""}, "never-held", "rail").status == 200);
    const Reply other = get(p, Device{"eth1", "", ""}, "1b6c9d1e-0000-4b5c-8d7e-9f0a1b2c3d4e", "rail");
    REQUIRE(other.status == 200);
    CHECK(other.j()["interface"]["addresses"][0] == address);

    // The claim records survive a restart: the same claim keeps its table.
    REQUIRE(p.stop() == 0);
    p.start();
    const Reply after = get(p, Device{"eth2", "", ""}, kClaim, "rail");
    REQUIRE(after.status == 200);
    CHECK(after.j() == second.j());
}

TEST_CASE("dranet provider: a request carrying the whole ResourceClaim is keyed by its metadata.uid",
          "[dranet][integration]") {
    ProviderProcess p("claimobj");
    p.write_profile("rail", rail_profile(p, "10.66.0.0/24", "10.66.0.1"));
    p.start();
    const std::string uid = "7d1f2e3c-4b5a-4968-8776-655443322110";
    // No claim_uid: the claim's UID only in the ResourceClaim the request carries.
    const std::string whole =
        R"({"device":{"name":"pci-0000-3b-00-1"},"claim":{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
        "metadata":{"name":"rail0-x","namespace":"ml","uid":")" +
        uid + R"("},"spec":{"devices":{"requests":[]}},"status":{}},"config":{"profile":"rail","interface":{}}})";
    const Reply first = http(p.socket(), "POST", "/GetProfileConfig", whole);
    REQUIRE(first.status == 200);
    const std::string address = first.j()["interface"]["addresses"][0];
    // Today's shape with the same UID: the same attachment (nothing new allocated).
    const Reply flat = get(p, Device{"pci-0000-3b-00-1", "", ""}, uid, "rail");
    REQUIRE(flat.status == 200);
    CHECK(flat.j() == first.j());
    // Both members naming different claims: refused, both named, nothing allocated.
    std::string both = whole;
    both.insert(1, R"("claim_uid":"8e2f2e3c-4b5a-4968-8776-655443322110",)");
    const Reply conflict = http(p.socket(), "POST", "/GetProfileConfig", both);
    CHECK(conflict.status == 400);
    CHECK_THAT(conflict.body, Catch::Contains("request.claim_uid") && Catch::Contains("request.claim.metadata.uid"));
    // Neither: 400 as before.
    const Reply neither = http(p.socket(), "POST", "/GetProfileConfig",
                               R"({"device":{"name":"eth1"},"claim":{"metadata":{}},"config":{"profile":"rail"}})");
    CHECK(neither.status == 400);
    CHECK_THAT(neither.body, Catch::Contains("request.claim_uid is missing"));
    // Released by the whole-claim shape; the address is free for the next claim.
    const std::string release_whole = R"({"device":{"name":"pci-0000-3b-00-1"},"claim":{"metadata":{"uid":")" + uid +
                                      R"("}},"config":{"profile":"rail"}})";
    CHECK(http(p.socket(), "POST", "/ReleaseProfileConfig", release_whole).status == 200);
    const Reply next = get(p, Device{"eth1", "", ""}, "9f3f2e3c-4b5a-4968-8776-655443322110", "rail");
    REQUIRE(next.status == 200);
    CHECK(next.j()["interface"]["addresses"][0] == address);
    still_serving(p);
}

TEST_CASE("dranet provider: --dranet-version decides the ARP fields and the start log says what is lost",
          "[dranet][integration]") {
    {
        ProviderProcess p("v14");
        p.write_profile("rail", rail_profile(p, "10.67.0.0/24", "10.67.0.1"));
        p.extra_args = {"--dranet-version", "v1.4.0"};
        p.start();
        const Reply r = get(p, Device{"eth1", "", ""}, kClaim, "rail");
        REQUIRE(r.status == 200);
        CHECK_FALSE(r.j()["interface"].contains("arpIgnore"));
        CHECK_FALSE(r.j()["interface"].contains("arpAnnounce"));
        CHECK(r.j()["rules"].size() == 1);
        REQUIRE(p.stop() == 0);
        const std::string log = p.log();
        CHECK_THAT(log, Catch::Contains("assuming DRANET 1.4"));
        CHECK_THAT(log, Catch::Contains("lost with DRANET 1.4"));
        CHECK_THAT(log, Catch::Contains("net.ipv4.conf.all.arp_ignore=1"));
        // Each answer whose ARP settings stay behind says so.
        CHECK_THAT(log, Catch::Contains("arp_ignore/arp_announce not sent: DRANET 1.4"));
    }
    for (const std::string version : {"1.5", "main"}) {
        ProviderProcess p("v15");
        p.write_profile("rail", rail_profile(p, "10.67.0.0/24", "10.67.0.1"));
        p.extra_args = {"--dranet-version", version};
        p.start();
        const Reply r = get(p, Device{"eth1", "", ""}, kClaim, "rail");
        REQUIRE(r.status == 200);
        CHECK(r.j()["interface"]["arpIgnore"] == 1);
        CHECK(r.j()["interface"]["arpAnnounce"] == 2);
        REQUIRE(p.stop() == 0);
        CHECK_THAT(p.log(), Catch::Contains("assuming DRANET " + version));
        CHECK_THAT(p.log(), !Catch::Contains("lost with"));
    }
    // A version without the profile-provider webhook, or a typo: a usage error, nothing started.
    const std::string ctl = rdmanet::test::bin_dir() + "/rdmanetctl";
    for (const std::string version : {"1.3.0", "latest"}) {
        const auto r = rdmanet::test::run_process({ctl, "dranet-provider", "--socket", "/nonexistent/p.sock",
                                                   "--profiles", "/nonexistent", "--dranet-version", version});
        CHECK(r.exit_code == 2);
        CHECK_THAT(r.err, Catch::Contains("--dranet-version"));
    }
}

TEST_CASE("dranet provider: claims in whereabouts' IPPools are refused until the profile says no reconciler runs",
          "[dranet][integration]") {
    ProviderProcess p("wbrecon");
    p.write_profile("local", rail_profile(p, "10.68.0.0/24", "10.68.0.1"));
    // whereabouts' IPPools through a kubeconfig that does not exist: the refusal comes before any
    // use of it (an API request would be a 500 here).
    const json kube_ipam = {{"range", "10.68.1.0/24"},
                            {"datastore", "kubernetes"},
                            {"kubernetes", {{"kubeconfig", p.dir() + "/absent.kubeconfig"}}},
                            {"node_slice_size", "/28"}};
    p.write_profile("slices", {{"ipam", kube_ipam}, {"policyRouting", true}});
    p.start();
    // Said at start, loudly (the warning names the profile and the way out) ...
    const std::string start_log = p.log();
    CHECK_THAT(start_log, Catch::Contains("refusing claims: profile \"slices\""));
    CHECK_THAT(start_log, Catch::Contains("ip-reconciler"));
    CHECK_THAT(start_log, !Catch::Contains("profile \"local\""));
    // ... and refused per request, before anything is allocated.
    const Reply refused = get(p, Device{"eth1", "", ""}, kClaim, "slices");
    CHECK(refused.status == 400);
    CHECK_THAT(refused.body, Catch::Contains("whereaboutsReconciler") && Catch::Contains("nv-ipam"));
    // The local store is never visited by whereabouts: served.
    CHECK(get(p, Device{"eth1", "", ""}, kClaim, "local").status == 200);
    // The admin's word (profiles are read per request): the guard is lifted, the request goes on
    // to the datastore (here: its kubeconfig is missing).
    p.write_profile("slices", {{"ipam", kube_ipam}, {"policyRouting", true}, kNoWhereaboutsReconciler});
    const Reply lifted = get(p, Device{"eth1", "", ""}, kClaim, "slices");
    CHECK(lifted.status != 200);
    CHECK_THAT(lifted.body, !Catch::Contains("ip-reconciler"));
    CHECK_THAT(lifted.body, Catch::Contains("absent.kubeconfig"));
    still_serving(p);
}

TEST_CASE("dranet provider: 16 concurrent claims on one pool get 16 addresses and 16 tables", "[dranet][integration]") {
    ProviderProcess p("conc");
    p.write_profile("rail", rail_profile(p, "10.62.0.0/24", "10.62.0.1"));
    p.start();
    std::vector<Reply> replies(16);
    std::vector<std::thread> threads;
    for (int i = 0; i < 16; ++i)
        threads.emplace_back([&, i] {
            replies[i] = get(p, Device{"eth" + std::to_string(i % 4), "", ""}, "claim-" + std::to_string(i), "rail");
        });
    for (auto& t : threads) t.join();
    std::set<std::string> addresses;
    std::set<unsigned> tables;
    for (const auto& r : replies) {
        REQUIRE(r.status == 200);
        addresses.insert(r.j()["interface"]["addresses"][0].get<std::string>());
        tables.insert(r.j()["rules"][0]["table"].get<unsigned>());
    }
    CHECK(addresses.size() == 16);
    CHECK(tables.size() == 16);
    still_serving(p);
}

TEST_CASE("dranet provider: a static address of the claim is reserved, another owner's gets 409",
          "[dranet][integration]") {
    ProviderProcess p("static");
    p.write_profile("rail", rail_profile(p, "10.63.0.0/24", "10.63.0.1"));
    p.start();
    const Reply mine = get(p, Device{"eth1", "", ""}, "claim-a", "rail", {"10.63.0.2/24"});
    REQUIRE(mine.status == 200);
    CHECK(mine.j()["interface"]["addresses"] == json::array({"10.63.0.2/24"}));
    // The range skips it for everybody else (it would be the lowest free address).
    const Reply next = get(p, Device{"eth1", "", ""}, "claim-b", "rail");
    REQUIRE(next.status == 200);
    CHECK(next.j()["interface"]["addresses"][0] != "10.63.0.2/24");
    const Reply taken = get(p, Device{"eth1", "", ""}, "claim-c", "rail", {"10.63.0.2/24"});
    CHECK(taken.status == 409);
    CHECK_THAT(taken.body, Catch::Contains("10.63.0.2"));
    still_serving(p);
}

TEST_CASE("dranet provider: bad requests get 400/404/405/413 with what to fix, and it keeps serving",
          "[dranet][integration]") {
    ProviderProcess p("bad");
    p.write_profile("rail", rail_profile(p, "10.64.0.0/24", "10.64.0.1"));
    p.write_profile("broken", json{{"ipam", {{"range", "10.64.0.0/33"}}}});
    p.start();
    const Device d{"eth1", "", ""};

    const Reply unknown = get(p, d, kClaim, "nosuch");
    CHECK(unknown.status == 404);
    CHECK_THAT(unknown.body, Catch::Contains("nosuch"));
    still_serving(p);

    CHECK(get(p, d, kClaim, "../profiles/rail").status == 400);
    CHECK(get(p, d, kClaim, "").status == 400);
    const Reply broken = get(p, d, kClaim, "broken");
    CHECK(broken.status == 400);
    CHECK_THAT(broken.body, Catch::Contains("10.64.0.0/33"));
    CHECK(get(p, d, "claim/../x", "rail").status == 400);
    still_serving(p);

    CHECK(http(p.socket(), "POST", "/GetProfileConfig", "{\"device\":").status == 400);
    CHECK(http(p.socket(), "POST", "/GetProfileConfig", "[1,2,3]").status == 400);
    CHECK(http(p.socket(), "POST", "/GetProfileConfig", std::string(100000, '[')).status == 400);
    CHECK(http(p.socket(), "GET", "/GetProfileConfig").status == 405);
    CHECK(http(p.socket(), "POST", "/health", "{}").status == 405);
    CHECK(http(p.socket(), "GET", "/GetDeviceAttributes").status == 404);
    still_serving(p);

    // 1 MiB of body: the limit itself is parsed (and is not JSON), one byte more is refused.
    CHECK(http(p.socket(), "POST", "/GetProfileConfig", std::string(1024 * 1024, 'x')).status == 400);
    CHECK(http(p.socket(), "POST", "/GetProfileConfig", std::string(1024 * 1024 + 1, 'x')).status == 413);
    {
        auto fd = connect_unix(p.socket());
        send_raw(fd.get(), "POST /GetProfileConfig HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999\r\n\r\n");
        CHECK(read_reply(fd.get()).status == 413);
    }
    {
        auto fd = connect_unix(p.socket());
        send_raw(fd.get(), "NOT HTTP AT ALL\r\n\r\n");
        CHECK(read_reply(fd.get()).status == 400);
    }
    {
        auto fd = connect_unix(p.socket());  // connect and hang up without a byte
    }
    still_serving(p);
    // Still allocating after all of it.
    CHECK(get(p, d, kClaim, "rail").status == 200);
}

TEST_CASE("dranet provider: a slow client is cut off and never blocks the others", "[dranet][integration]") {
    ProviderProcess p("slow", 2);
    p.write_profile("rail", rail_profile(p, "10.65.0.0/24", "10.65.0.1"));
    p.start();
    // Half a request, then silence: the connection is answered 408 and closed after the read
    // timeout, and meanwhile the other worker serves everyone else.
    auto slow = connect_unix(p.socket());
    send_raw(slow.get(), "POST /GetProfileConfig HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"dev");
    for (int i = 0; i < 5; ++i) still_serving(p);
    CHECK(get(p, Device{"eth1", "", ""}, kClaim, "rail").status == 200);
    const Reply cut = read_reply(slow.get());  // SO_RCVTIMEO 20 s: a server that never cuts fails here
    CHECK(cut.status == 408);
    still_serving(p);
}

TEST_CASE("dranet provider: refuses a socket in a directory others can write, and a path that is not a socket",
          "[dranet][integration]") {
    const std::string ctl = rdmanet::test::bin_dir() + "/rdmanetctl";
    char tmpl[] = "/tmp/rdmanet-dranet-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string dir = tmpl;
    std::filesystem::create_directories(dir + "/profiles");
    std::filesystem::create_directories(dir + "/open");
    ::chmod((dir + "/open").c_str(), 01777);
    auto r = rdmanet::test::run_process({ctl, "dranet-provider", "--socket", dir + "/open/p.sock", "--profiles",
                                         dir + "/profiles", "--state-dir", dir + "/state"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("writable by group or others"));
    CHECK_FALSE(std::filesystem::exists(dir + "/open/p.sock"));

    std::ofstream(dir + "/file") << "not a socket";
    r = rdmanet::test::run_process({ctl, "dranet-provider", "--socket", dir + "/file", "--profiles", dir + "/profiles",
                                    "--state-dir", dir + "/state"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("not a socket"));
    std::ifstream in(dir + "/file");
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "not a socket");
    std::filesystem::remove_all(dir);
}
