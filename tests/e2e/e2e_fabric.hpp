#pragma once
// A pod with a cluster eth0 next to rdmanet rails, and a far-side namespace behind them, on the
// real kernel; and reading the pod's routing state (rules, policy tables, sysctls) back through
// iproute2. Shared by the multi-rail, failed-ADD and sbr-scenario tests.
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "e2e/e2e_helpers.hpp"
#include "support/process.hpp"

namespace rdmanet::test::e2e {

inline const std::string kRemote = "192.0.2.100";  // an address of the far side, reachable through every rail

inline ProcessResult in_ns(const ScopedNetns& ns, std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"ip", "netns", "exec", ns.name()});
    return run_process(argv, {}, "", std::chrono::seconds(20));
}

inline std::string sysctl(const ScopedNetns& ns, const std::string& key) {
    auto r = in_ns(ns, {"sysctl", "-n", key});
    std::string v = r.out;
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
    return v;
}

inline unsigned long rx_packets(const ScopedNetns& ns, const std::string& ifname) {
    auto r = in_ns(ns, {"cat", "/sys/class/net/" + ifname + "/statistics/rx_packets"});
    return r.exit_code == 0 ? std::stoul(r.out) : 0;
}

inline json ip_json(const ScopedNetns& ns, const std::vector<std::string>& args) {
    std::vector<std::string> argv{"-j"};
    argv.insert(argv.end(), args.begin(), args.end());
    return json::parse(ns.ip(argv), nullptr, false);
}

// `ip route get <dst> [from <src>]`: {dev, gateway}.
inline std::pair<std::string, std::string> route_get(const ScopedNetns& ns, const std::string& dst,
                                                     const std::string& from = "") {
    std::vector<std::string> args{"route", "get", dst};
    if (!from.empty()) args.insert(args.end(), {"from", from});
    const json j = ip_json(ns, args);
    if (!j.is_array() || j.empty()) return {"", ""};
    return {j[0].value("dev", ""), j[0].value("gateway", "")};
}

// The pod's rules that are not the kernel's three defaults (local, main, default).
inline std::vector<json> own_rules(const ScopedNetns& ns, const std::string& family = "-4") {
    std::vector<json> rules;
    const json j = json::parse(ns.ip({family, "-j", "rule", "show"}), nullptr, false);
    for (const auto& r : j)
        if (r.contains("src") && r.value("src", "") != "all") rules.push_back(r);
    return rules;
}

// Routes of the pod in tables other than main and local (the policy tables), both families.
inline std::vector<std::string> table_routes(const ScopedNetns& ns) {
    std::vector<std::string> lines;
    for (const char* family : {"-4", "-6"}) {
        const json j = json::parse(ns.ip({family, "-j", "route", "show", "table", "all"}), nullptr, false);
        for (const auto& r : j) {
            const std::string table = r.contains("table") ? r["table"].dump() : "\"main\"";
            if (table == "\"main\"" || table == "\"local\"") continue;
            lines.push_back(table + " " + r.value("dst", "") + " " + r.value("dev", ""));
        }
    }
    return lines;
}

inline json rail_plugin(const Workspace& ws, const std::string& master, const std::string& range,
                        const std::string& gateway, const json& extra = json::object()) {
    json plugin = macvlan_plugin(master, embedded_ipam(ws, range, gateway));
    plugin["policyRouting"] = true;
    plugin.update(extra);
    return plugin;
}

struct Rail {
    std::string network, ifname;
    json plugin;
    std::string id = container_id("mr");
    CniOutcome add_result;
    std::string address() const { return address_of(add_result.json["ips"][0].value("address", "")); }
    std::string mac() const { return add_result.json["interfaces"][0].value("mac", ""); }
};

inline CniOutcome call(const Workspace& ws, const std::string& verb, const ScopedNetns& pod, const Rail& rail) {
    return direct(ws, verb, pod.path(), rail.id, rail.ifname, plugin_stdin(rail.network, "1.0.0", rail.plugin));
}

// A far-side namespace: an uplink veth per rail (host end = the macvlan master, far end up), the
// remote address on its loopback, and a cluster veth whose pod end becomes eth0 with the pod's
// default route.
struct Fabric {
    ScopedNetns pod{"pod"};
    ScopedNetns far{"far"};
    ScopedVeth cluster{&pod, &far, "cl"};
    std::vector<std::unique_ptr<ScopedVeth>> uplinks;

    Fabric() {
        pod.ip({"link", "set", "lo", "up"});
        pod.ip({"link", "set", cluster.name_a(), "name", "eth0"});
        pod.ip({"addr", "add", "10.250.0.2/24", "dev", "eth0"});
        pod.ip({"link", "set", "eth0", "up"});
        pod.ip({"route", "add", "default", "via", "10.250.0.1"});
        far.ip({"link", "set", "lo", "up"});
        far.ip({"addr", "add", kRemote + "/32", "dev", "lo"});
        far.ip({"addr", "add", "10.250.0.1/24", "dev", cluster.name_b()});
        far.ip({"link", "set", cluster.name_b(), "up"});
    }
    // A new uplink; its far end gets `far_address` (may be empty) and is left for the caller to enslave.
    const ScopedVeth& uplink(const std::string& far_address) {
        uplinks.push_back(std::make_unique<ScopedVeth>(nullptr, &far, "ru"));
        const auto& v = *uplinks.back();
        set_link_up(nullptr, v.name_a());
        if (!far_address.empty()) far.ip({"addr", "add", far_address, "dev", v.name_b()});
        far.ip({"link", "set", v.name_b(), "up"});
        return v;
    }
};

// Everything of the pod's network state an attachment can touch, as text to compare before and
// after: links with their addresses, routes of every table and rules of both families, and every
// per-interface sysctl (all, default and each link's).
struct PodSnapshot {
    std::string links, routes, rules, sysctls;
    bool operator==(const PodSnapshot& o) const {
        return links == o.links && routes == o.routes && rules == o.rules && sysctls == o.sysctls;
    }
};

inline std::ostream& operator<<(std::ostream& os, const PodSnapshot& s) {
    return os << "links:\n"
              << s.links << "routes:\n"
              << s.routes << "rules:\n"
              << s.rules << "sysctls: " << s.sysctls.size() << " bytes";
}

inline PodSnapshot pod_snapshot(const ScopedNetns& ns) {
    PodSnapshot s;
    s.links = ns.ip({"-br", "addr", "show"});
    s.routes = ns.ip({"-4", "route", "show", "table", "all"}) + ns.ip({"-6", "route", "show", "table", "all"});
    s.rules = ns.ip({"-4", "rule", "show"}) + ns.ip({"-6", "rule", "show"});
    s.sysctls = in_ns(ns, {"sh", "-c", "sysctl -a 2>/dev/null | grep -E '^net[.]ipv(4|6)[.](conf|neigh)[.]'"}).out;
    return s;
}

}  // namespace rdmanet::test::e2e
