#pragma once
// What every end-to-end test needs on top of support/: a scratch directory for the plugin's
// state, libcni's cache and host-local's data; conflist builders; one attachment as the runtime
// sees it; and reading the kernel's view back through iproute2's JSON output.
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cni_driver.hpp"
#include "support/netns_fixture.hpp"

namespace rdmanet::test::e2e {

using json = nlohmann::json;

// A temp directory removed (recursively) on destruction: nothing a test writes outlives it.
class Workspace {
public:
    Workspace();
    ~Workspace();
    Workspace(const Workspace&) = delete;
    Workspace& operator=(const Workspace&) = delete;

    std::string path(const std::string& relative) const { return (root_ / relative).string(); }
    std::string state_dir() const { return path("state"); }
    std::string cache_dir() const { return path("cache"); }
    std::string ipam_dir() const { return path("ipam"); }
    // Environment for the plugin (libcni passes the caller's environment on): a node policy
    // (policy_file()) that puts the state dir, the log dir and the IPAM's allowed dirs inside the
    // workspace instead of /var/lib/cni/rdmanet, /var/log, /etc/cni.
    std::map<std::string, std::string> env() const { return {{"RDMANET_POLICY_FILE", policy_file()}}; }
    std::string policy_file() const { return path("policy.json"); }
    // The audit log of that policy (every refusal appends one line).
    std::string audit_log() const { return path("policy.log"); }

    // Writes `content` to <root>/<name> and returns the path.
    std::string write(const std::string& name, const std::string& content) const;
    // Regular files in the state dir (rdmanet's per-attachment state).
    std::vector<std::string> state_files() const;
    // Addresses host-local has reserved for `network` (its data dir holds one file per address).
    std::vector<std::string> ipam_reservations(const std::string& network) const;

private:
    std::filesystem::path root_;
};

// {"type":"host-local","subnet":...,"dataDir":<ws>/ipam} merged with `extra`.
json host_local(const Workspace& ws, const std::string& subnet, const json& extra = json::object());
// The embedded IPAM ({"type":"rdmanet-ipam"}, run in-process by the plugin) with its store in
// <ws>/rdmanet-ipam.
json embedded_ipam(const Workspace& ws, const std::string& range, const std::string& gateway);
// `rdmanetctl pool list --json` of that store (throws when rdmanetctl fails).
json embedded_pools(const Workspace& ws);
json macvlan_plugin(const std::string& master, const json& ipam);
json hostdev_plugin(const std::string& device, const json& ipam);
json conflist(const std::string& name, const std::string& version, const json& plugin);
// The plugin object as libcni puts it on stdin (list name and cniVersion injected), for direct calls.
json plugin_stdin(const std::string& name, const std::string& version, const json& plugin);

// A unique, valid container id.
std::string container_id(const std::string& prefix = "e2e");

// One attachment (network, pod netns, ifname, container id) driven through libcni.
struct Attachment {
    const Workspace& ws;
    std::string conflist_path;
    std::string netns_path;
    std::string container_id;
    std::string ifname = "net1";

    CniOutcome call(const std::string& verb) const;
    CniOutcome add() const { return call("add"); }
    CniOutcome check() const { return call("check"); }
    CniOutcome del() const { return call("del"); }
};

// The same attachment called directly (no libcni), for what libcni 1.1.2 cannot send.
CniOutcome direct(const Workspace& ws, const std::string& command, const std::string& netns, const std::string& id,
                  const std::string& ifname, const json& stdin_conf);

// `ip [-n ns] -j -d link show dev <ifname>`: the link's JSON object, nullopt when absent.
// ns == nullptr means the test program's own namespace (the host).
std::optional<json> find_link(const ScopedNetns* ns, const std::string& ifname);
std::vector<std::string> link_names(const ScopedNetns* ns);
// Host links stacked on `master` (iproute2's "link" field): a veth end's peer, and any macvlan
// left behind. Targeted on purpose: other test programs create host links concurrently, so a
// whole-host snapshot would not be stable.
std::vector<std::string> host_links_on(const std::string& master);
// IPv4 addresses of `ifname` in `ns` as "a.b.c.d/len".
std::vector<std::string> ipv4_addresses(const ScopedNetns& ns, const std::string& ifname);
// A link's alias ("" when none), MAC, admin-up flag, kind ("" for none/veth-less info).
std::string link_alias(const json& link);
std::string link_mac(const json& link);
bool link_is_up(const json& link);
std::string link_kind(const json& link);
void set_link_up(const ScopedNetns* ns, const std::string& ifname);

// True when lo is the only link in `ns`: nothing of ours (or half of it) is left there.
bool only_loopback(const ScopedNetns& ns);

// One ICMP echo from inside `from` to `ip`: `ip netns exec <from> ping -c1 -W2 <ip>` when
// iputils ping is installed, else the same through Perl's core Net::Ping (this machine's image
// has perl but no ping).
bool pod_ping(const ScopedNetns& from, const std::string& ip);

// Polls `condition` every 20 ms until it holds or `timeout` passes (netns teardown is asynchronous).
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = std::chrono::seconds(5));

// "10.0.0.2/24" -> "10.0.0.2".
std::string address_of(const std::string& cidr);

}  // namespace rdmanet::test::e2e
