// "policyRouting", "sysctl" and "ipv6" (docs/configuration.md describes them).
#include <algorithm>
#include <vector>

#include "sections.hpp"
#include "rdmanet/cni/config/pod_settings.hpp"
#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

namespace {

constexpr std::string_view kTrees[] = {"net.ipv4.conf", "net.ipv4.neigh", "net.ipv6.conf", "net.ipv6.neigh"};
constexpr std::string_view kSysctlHint =
    "only this interface's own settings: net.ipv4.conf.IFNAME.<name>, net.ipv4.neigh.IFNAME.<name>, "
    "net.ipv6.conf.IFNAME.<name> or net.ipv6.neigh.IFNAME.<name> (IFNAME is replaced by the pod-side name)";

bool is_leaf(std::string_view leaf) {
    if (leaf.empty() || leaf.size() > 64) return false;
    return std::all_of(leaf.begin(), leaf.end(),
                       [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; });
}

void parse_policy_routing(const JsonFields& top, NetConf& conf) {
    const auto* value = top.get("policyRouting");
    if (!value) return;
    if (value->is_boolean()) {
        if (value->get<bool>()) conf.pod.policy_routing = PolicyRouting{};
        return;
    }
    if (!value->is_object())
        top.invalid("policyRouting",
                    "must be true, false or an object {\"table\": N, \"priority\": P, "
                    "\"addSourceHints\": true|false}, got " +
                        base::show_json(*value));
    const JsonFields pr(*value, top.name("policyRouting"), top.code());
    PolicyRouting routing;
    routing.table = pr.uint("table");
    if (routing.table && (*routing.table == 0 || (*routing.table >= 253 && *routing.table <= 255)))
        pr.invalid("table",
                   std::to_string(*routing.table) + " is reserved (0 unspec, 253 default, 254 main, 255 local)",
                   "use 1-252 or 256-4294967295, or leave \"table\" out for the first free table from 100 up");
    routing.priority = pr.uint("priority");
    if (routing.priority && (*routing.priority < kMinRulePriority || *routing.priority > kMaxRulePriority))
        pr.invalid("priority",
                   std::to_string(*routing.priority) + " is out of range: use " + std::to_string(kMinRulePriority) +
                       "-" + std::to_string(kMaxRulePriority),
                   "0 would come before the local table's rule, 32766 and above after the main table's");
    routing.add_source_hints = pr.boolean("addSourceHints").value_or(false);
    conf.pod.policy_routing = routing;
}

void parse_sysctl(const JsonFields& top, NetConf& conf) {
    const auto* object = top.object("sysctl");
    if (!object) return;
    const JsonFields sysctl(*object, top.name("sysctl"), top.code());
    for (auto it = object->begin(); it != object->end(); ++it) {
        const std::string& key = it.key();
        std::string why;
        auto entry = parse_sysctl_key(key, why);
        if (!entry) sysctl.invalid(key, why, std::string(kSysctlHint));
        if (!it.value().is_string())
            sysctl.invalid(key, "must be a string, got " + base::show_json(it.value()),
                           "write the value as the tuning plugin takes it: \"1\"");
        entry->value = it.value().get<std::string>();
        if (!is_valid_sysctl_value(entry->value))
            sysctl.invalid(key,
                           text::quote(entry->value) + " is not a sysctl value: 1-256 printable characters, no '/'");
        conf.pod.sysctl.push_back(std::move(*entry));
    }
}

void parse_ipv6(const JsonFields& top, NetConf& conf) {
    const auto* object = top.object("ipv6");
    if (!object) return;
    const JsonFields ipv6(*object, top.name("ipv6"), top.code());
    conf.pod.ipv6_dad = ipv6.boolean("dad");
}

}  // namespace

std::optional<SysctlEntry> parse_sysctl_key(std::string_view key, std::string& why) {
    std::string dotted(key);
    // The tuning plugin also takes '/' as the separator ("net/ipv4/conf/IFNAME/arp_ignore"):
    // then exactly five parts, and the interface part may hold dots (a VLAN's "net1.100").
    std::optional<std::string> slashed_iface;
    if (dotted.find('/') != std::string::npos) {
        std::vector<std::string> parts;
        std::string part;
        for (char c : dotted) {
            if (c == '/') {
                parts.push_back(part);
                part.clear();
            } else {
                part += c;
            }
        }
        parts.push_back(part);
        if (parts.size() != 5 || parts[0].find('.') != std::string::npos || parts[1].find('.') != std::string::npos ||
            parts[2].find('.') != std::string::npos || parts[4].find('.') != std::string::npos) {
            why = "is not of the form net/ipv4|ipv6/conf|neigh/IFNAME/<name>";
            return std::nullopt;
        }
        slashed_iface = parts[3];
        dotted = parts[0] + "." + parts[1] + "." + parts[2] + "." + parts[3] + "." + parts[4];
    }
    for (auto tree : kTrees) {
        if (dotted.size() <= tree.size() + 1 || dotted.compare(0, tree.size(), tree) != 0 || dotted[tree.size()] != '.')
            continue;
        const std::string rest = dotted.substr(tree.size() + 1);
        const auto dot = rest.rfind('.');
        if (dot == std::string::npos || dot == 0) {
            why = "names no interface: write " + std::string(tree) + ".IFNAME.<name>";
            return std::nullopt;
        }
        SysctlEntry entry;
        entry.key = std::string(key);
        entry.tree = std::string(tree);
        entry.iface = rest.substr(0, dot);
        entry.leaf = rest.substr(dot + 1);
        if (slashed_iface && *slashed_iface != entry.iface) {
            why = "is not of the form net/ipv4|ipv6/conf|neigh/IFNAME/<name>";
            return std::nullopt;
        }
        if (entry.iface == "all" || entry.iface == "default") {
            why = "is the pod-wide \"" + entry.iface + "\" setting, not this interface's";
            return std::nullopt;
        }
        // Dots inside a name are a VLAN's; at its ends or doubled they are a path trick.
        if (entry.iface != "IFNAME" && (!is_valid_ifname(entry.iface) || entry.iface.find("..") != std::string::npos ||
                                        entry.iface.front() == '.' || entry.iface.back() == '.')) {
            why = "names no valid interface (" + text::quote(entry.iface) + ")";
            return std::nullopt;
        }
        if (!is_leaf(entry.leaf)) {
            why = "has no valid setting name (" + text::quote(entry.leaf) + ")";
            return std::nullopt;
        }
        return entry;
    }
    why = "is outside the per-interface trees";
    return std::nullopt;
}

bool is_valid_sysctl_value(std::string_view value) {
    if (value.empty() || value.size() > 256) return false;
    return std::all_of(value.begin(), value.end(), [](char c) { return c >= ' ' && c <= '~' && c != '/'; });
}

std::string sysctl_key_for(const SysctlEntry& entry, const std::string& ifname) {
    return entry.tree + "." + (entry.iface == "IFNAME" ? ifname : entry.iface) + "." + entry.leaf;
}

std::string sysctl_path(const SysctlEntry& entry, const std::string& ifname) {
    std::string tree = entry.tree;
    std::replace(tree.begin(), tree.end(), '.', '/');
    return tree + "/" + (entry.iface == "IFNAME" ? ifname : entry.iface) + "/" + entry.leaf;
}

void parse_pod_settings(const JsonFields& top, NetConf& conf, const Attempt& attempt) {
    attempt([&] { parse_policy_routing(top, conf); });
    attempt([&] { parse_sysctl(top, conf); });
    attempt([&] { parse_ipv6(top, conf); });
}

}  // namespace rdmanet::cni
