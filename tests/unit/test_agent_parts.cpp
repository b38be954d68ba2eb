// The node agent's pure parts: the sandbox decision, the plugin's call records, the Prometheus
// text it renders (read back by a strict parser) and the per-node pod view.
#include <catch2/catch.hpp>

#include <cstring>

#include "rdmanet/cni/node/agent_metrics.hpp"
#include "rdmanet/cni/plugin/call_metrics.hpp"
#include "rdmanet/cni/node/pod_scope.hpp"
#include "rdmanet/cni/node/prometheus_text.hpp"
#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/state/sandbox.hpp"
#include "support/prometheus_parse.hpp"

using namespace rdmanet::cni;
using namespace rdmanet::cni::node;

TEST_CASE("agent: a sandbox is gone, replaced or alive by its recorded namespace identity", "[unit][agent]") {
    const NetnsIdentity recorded{7, 4026532000};
    CHECK(classify_sandbox("/run/netns/a", recorded, recorded) == SandboxStatus::alive);
    CHECK(classify_sandbox("/run/netns/a", recorded, {}) == SandboxStatus::gone);
    CHECK(classify_sandbox("/run/netns/a", recorded, {7, 4026532999}) == SandboxStatus::replaced);
    CHECK(classify_sandbox("/run/netns/a", recorded, {8, 4026532000}) == SandboxStatus::replaced);
    // Recorded before identities existed: the path alone decides.
    CHECK(classify_sandbox("/run/netns/a", {}, recorded) == SandboxStatus::alive);
    CHECK(classify_sandbox("/run/netns/a", {}, {}) == SandboxStatus::gone);
    CHECK(classify_sandbox("", recorded, {}) == SandboxStatus::unknown);
}

TEST_CASE("agent: a sandbox whose directory is not visible is unknown, never gone", "[unit][agent]") {
    AttachmentState s;
    s.netns = "/no-such-dir-rdmanet/ns/net";
    s.netns_inode = 5;
    CHECK(sandbox_status(s) == SandboxStatus::unknown);
    s.netns = "/tmp/rdmanet-no-such-netns-file";
    CHECK(sandbox_status(s) == SandboxStatus::gone);
}

TEST_CASE("agent: call records survive a torn tail and aggregate into histograms", "[unit][agent]") {
    CallRecord a;
    a.verb = static_cast<std::uint8_t>(Command::add);
    a.duration_us = 3000;  // 3 ms -> bucket le=0.005
    CallRecord b = a;
    b.code = 101;
    b.duration_us = 20000000;  // 20 s -> only +Inf
    std::string bytes(sizeof a * 2 + 5, '\0');
    std::memcpy(bytes.data(), &a, sizeof a);
    std::memcpy(bytes.data() + sizeof a, &b, sizeof b);
    const auto records = parse_call_records(bytes);
    REQUIRE(records.size() == 2);
    CHECK(parse_call_records(std::string(sizeof a, 'x')).empty());  // not ours: nothing read

    AgentMetrics m;
    m.record_calls(records);
    RepairReport report;
    report.repaired.push_back(RepairItem{"n", "c", "net1", "hostdev", "/run/netns/x", "netns_gone", ""});
    report.failed.push_back(RepairItem{"n", "d", "net1", "sriov", "/run/netns/y", "netns_gone", "busy"});
    m.record_pass(report, 1700000000);
    m.set_attachments({{"macvlan", 3}});
    const auto text =
        m.render({PoolUsage{"blue", "10.0.0.0/24", "", 254, 10}, PoolUsage{"we\"ird\\", "fd00::/120", "", 254, 0}});
    const auto p = rdmanet::test::parse_prometheus_text(text);
    CHECK(p.value("rdmanet_pool_free", {{"network", "blue"}, {"range", "10.0.0.0/24"}}) == 244.0);
    CHECK(p.value("rdmanet_pool_size", {{"network", "we\"ird\\"}, {"range", "fd00::/120"}}) == 254.0);
    CHECK(p.value("rdmanet_attachments", {{"mode", "macvlan"}}) == 3.0);
    CHECK(p.value("rdmanet_agent_repairs_total", {{"mode", "hostdev"}, {"reason", "netns_gone"}}) == 1.0);
    CHECK(p.value("rdmanet_agent_repair_failures_total", {{"mode", "sriov"}}) == 1.0);
    CHECK(p.value("rdmanet_plugin_calls_total", {{"verb", "ADD"}, {"code", "0"}}) == 1.0);
    CHECK(p.value("rdmanet_plugin_calls_total", {{"verb", "ADD"}, {"code", "101"}}) == 1.0);
    CHECK(p.value("rdmanet_plugin_duration_seconds_bucket", {{"verb", "ADD"}, {"le", "0.0025"}}) == 0.0);
    CHECK(p.value("rdmanet_plugin_duration_seconds_bucket", {{"verb", "ADD"}, {"le", "0.005"}}) == 1.0);
    CHECK(p.value("rdmanet_plugin_duration_seconds_bucket", {{"verb", "ADD"}, {"le", "10"}}) == 1.0);
    CHECK(p.value("rdmanet_plugin_duration_seconds_bucket", {{"verb", "ADD"}, {"le", "+Inf"}}) == 2.0);
    CHECK(p.value("rdmanet_plugin_duration_seconds_sum", {{"verb", "ADD"}}).value_or(-1) == Approx(20.003));
    CHECK(p.value("rdmanet_agent_last_pass_timestamp_seconds") == 1700000000.0);
}

TEST_CASE("agent metrics: refused Kubernetes credentials show as a gauge and a counter", "[unit][agent]") {
    AgentMetrics m;
    auto scrape = [&] { return rdmanet::test::parse_prometheus_text(m.render({})); };
    CHECK(scrape().value("rdmanet_kube_access_denied") == 0.0);
    m.record_kube_access(2, false);  // two requests of a pass refused
    CHECK(scrape().value("rdmanet_kube_access_denied") == 1.0);
    CHECK(scrape().value("rdmanet_kube_access_denied_total") == 2.0);
    m.record_kube_access(0, true);  // the agent's pass fine, but a CNI call was refused since
    CHECK(scrape().value("rdmanet_kube_access_denied") == 1.0);
    m.record_kube_access(0, false);  // both fine again: the gauge drops, the counter stays
    CHECK(scrape().value("rdmanet_kube_access_denied") == 0.0);
    CHECK(scrape().value("rdmanet_kube_access_denied_total") == 2.0);
}

TEST_CASE("agent metrics: single-pool releases DEL deferred show as a gauge and a counter", "[unit][agent]") {
    AgentMetrics m;
    auto scrape = [&] { return rdmanet::test::parse_prometheus_text(m.render({})); };
    CHECK(scrape().value("rdmanet_ipam_deferred_releases") == 0.0);
    m.record_deferred_releases(0, 3);  // the API server still refuses: three wait
    CHECK(scrape().value("rdmanet_ipam_deferred_releases") == 3.0);
    m.record_deferred_releases(2, 1);
    m.record_deferred_releases(1, 0);
    CHECK(scrape().value("rdmanet_ipam_deferred_releases") == 0.0);
    CHECK(scrape().value("rdmanet_ipam_deferred_releases_finished_total") == 3.0);
}

TEST_CASE("agent: label values are escaped as the text format requires", "[unit][agent]") {
    CHECK(escape_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
    CHECK(format_sample_value(3) == "3");
    CHECK(format_sample_value(0.0025) == "0.0025");
    CHECK(format_sample_value(1795503880.25) == "1795503880.25");
}

TEST_CASE("agent: an attachment's pod is present, missing or replaced in the node's pod list", "[unit][agent]") {
    const auto pods =
        parse_pod_list(R"({"kind":"PodList","items":[{"metadata":{"namespace":"default","name":"a","uid":"u1"}}]})");
    AttachmentState s;
    s.cni_args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=a;K8S_POD_UID=u1";
    CHECK(pod_presence(s, pods) == PodPresence::present);
    s.cni_args = "K8S_POD_NAMESPACE=default;K8S_POD_NAME=a;K8S_POD_UID=u2";
    CHECK(pod_presence(s, pods) == PodPresence::replaced);
    s.cni_args = "K8S_POD_NAMESPACE=default;K8S_POD_NAME=b";
    CHECK(pod_presence(s, pods) == PodPresence::missing);
    s.cni_args = "";
    CHECK(pod_presence(s, pods) == PodPresence::unknown);
    CHECK_THROWS(parse_pod_list(R"({"kind":"Status"})"));
}

TEST_CASE("agent: an attachment state keeps the ADD's $NODENAME for the DEL a repair runs", "[unit][agent]") {
    // Node-slice IPAM releases in this node's slice: a repair long after the ADD, run by the agent
    // (whose own environment may differ), must name the node the ADD named.
    AttachmentState state;
    state.nodename = "gpu-node-7";
    const auto text = state.to_json().dump();
    CHECK(nlohmann::json::parse(text).at("nodename") == "gpu-node-7");
    CHECK(AttachmentState::from_json(nlohmann::json::parse(text)).nodename == "gpu-node-7");
    // States written without it (unset at ADD, or by an older rdmanet) resolve the node as before.
    AttachmentState unset;
    CHECK_FALSE(unset.to_json().contains("nodename"));
    CHECK_FALSE(AttachmentState::from_json(unset.to_json()).nodename.has_value());
}
