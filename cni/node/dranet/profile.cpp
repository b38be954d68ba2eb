// Loading a DRANET profile: see profile.hpp.
#include "rdmanet/cni/node/dranet/profile.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>

#include "rdmanet/base/fd.hpp"
#include "rdmanet/base/json_fields.hpp"
#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/node/dranet/wire.hpp"
#include "rdmanet/cni/pod/pod_plan.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::cni::node::dranet {

namespace {

constexpr std::size_t kMaxProfileBytes = 1024 * 1024;

[[noreturn]] void invalid(std::string_view name, const std::string& message) {
    throw ProviderError(400, "profile \"" + std::string(name) + "\": " + message);
}

// DRANET has fields for exactly these two of the per-interface sysctls.
std::optional<int> arp_value(const SysctlEntry& entry, std::string_view name) {
    int value = -1;
    try {
        std::size_t used = 0;
        value = std::stoi(entry.value, &used);
        if (used != entry.value.size()) value = -1;
    } catch (const std::exception&) {
    }
    const bool ok = entry.leaf == "arp_ignore" ? (value >= 0 && value <= 3) || value == 8 : value >= 0 && value <= 2;
    if (!ok)
        invalid(name, "sysctl." + entry.key + " = \"" + entry.value + "\" is not a value DRANET takes (" +
                          (entry.leaf == "arp_ignore" ? "0-3 or 8" : "0-2") + ")");
    return value;
}

}  // namespace

bool is_valid_profile_name(std::string_view name) {
    return !name.empty() && name.size() <= 253 && name.front() != '.' &&
           std::all_of(name.begin(), name.end(),
                       [](unsigned char c) { return std::isalnum(c) || c == '.' || c == '_' || c == '-'; });
}

Profile parse_profile(std::string_view name, std::string_view text, const NodePolicy& policy,
                      const std::string& node_name, bool strict) {
    nlohmann::json j;
    try {
        j = parse_json_bounded(text);
    } catch (const Error& e) {
        invalid(name, "not valid JSON: " + e.msg() + (e.details().empty() ? "" : " (" + e.details() + ")"));
    }
    if (!j.is_object()) invalid(name, "must be a JSON object");
    static const std::set<std::string> known = {"network", "ipam", "policyRouting", "sysctl", "whereaboutsReconciler"};
    for (const auto& [key, value] : j.items())
        if (!known.contains(key))
            invalid(name, "unknown key \"" + key +
                              "\" (a profile has network, ipam, policyRouting, sysctl, whereaboutsReconciler)");
    if (!j.contains("ipam") || !j["ipam"].is_object())
        invalid(name, "\"ipam\" must be an rdmanet-ipam section (a JSON object)");

    Profile p;
    p.name = std::string(name);
    p.network = p.name;
    if (j.contains("whereaboutsReconciler")) {
        if (j["whereaboutsReconciler"] != "absent")
            invalid(name,
                    "\"whereaboutsReconciler\" takes only \"absent\" (the admin's word that whereabouts' "
                    "ip-reconciler does not run in this cluster), got " +
                        j["whereaboutsReconciler"].dump());
        p.whereabouts_reconciler_absent = true;
    }
    if (j.contains("network")) {
        if (!j["network"].is_string()) invalid(name, "\"network\" must be a string");
        p.network = j["network"].get<std::string>();
    }
    // The CNI path's parser reads the profile as the network configuration it would be in a
    // NetworkAttachmentDefinition (same keys, same errors, same defaults).
    nlohmann::json conf = {{"cniVersion", "1.1.0"}, {"name", p.network}, {"type", "rdmanet"}};
    conf["ipam"] = j["ipam"];
    if (!conf["ipam"].contains("type")) conf["ipam"]["type"] = "rdmanet-ipam";
    if (conf["ipam"]["type"] != "rdmanet-ipam")
        invalid(name, "ipam.type must be \"rdmanet-ipam\" (or left out): the provider allocates with rdmanet's IPAM");
    if (j.contains("policyRouting")) conf["policyRouting"] = j["policyRouting"];
    if (j.contains("sysctl")) conf["sysctl"] = j["sysctl"];
    try {
        const NetConf net = parse_common_conf(conf.dump(), strict ? Command::add : Command::del);
        p.pod = net.pod;
        check_pod_settings(p.pod, "IFNAME", policy);
        p.ipam = ipam::load_ipam_config(net.ipam.raw, strict ? ipam::Strictness::strict : ipam::Strictness::lenient,
                                        policy.ipam_limits());
        p.ipam.store.nodename = node_name;
    } catch (const ProviderError&) {
        throw;
    } catch (const Error& e) {
        invalid(name, e.msg() + (e.details().empty() ? "" : ": " + e.details()));
    } catch (const ipam::IpamError& e) {
        invalid(name, e.what());
    }
    for (const auto& entry : p.pod.sysctl) {
        if (entry.tree != "net.ipv4.conf" || (entry.leaf != "arp_ignore" && entry.leaf != "arp_announce"))
            invalid(name, "sysctl." + entry.key +
                              ": DRANET applies only net.ipv4.conf.IFNAME.arp_ignore and arp_announce; configure the "
                              "others on the claim's DRANET config or leave them out");
    }
    // The ARP values DRANET is asked for: policyRouting's defaults, then the profile's own, as
    // the CNI path's sysctl plan orders them.
    for (const auto& write : plan_sysctls(p.pod, "IFNAME", false, false)) {
        const bool ignore = write.path == "net/ipv4/conf/IFNAME/arp_ignore";
        const bool announce = write.path == "net/ipv4/conf/IFNAME/arp_announce";
        if (!ignore && !announce) continue;  // rp_filter: DRANET has no field for it
        SysctlEntry e{write.origin, "net.ipv4.conf", "IFNAME", ignore ? "arp_ignore" : "arp_announce", write.value};
        (ignore ? p.arp_ignore : p.arp_announce) = arp_value(e, name);
    }
    return p;
}

std::optional<std::string> whereabouts_hazard(const Profile& profile) {
    const auto& ipam = profile.ipam;
    if (ipam.store.datastore != ipam::Datastore::kubernetes || ipam.nv.enabled || profile.whereabouts_reconciler_absent)
        return std::nullopt;
    return "profile \"" + profile.name + "\" keeps its claims in whereabouts' objects (" +
           (ipam.store.node_slice_prefix ? "the node's slice IPPool" : "an IPPool") +
           " of datastore \"kubernetes\", and OverlappingRangeIPReservations), where whereabouts' ip-reconciler "
           "releases every entry whose podRef is not a live pod listing the address in its network-status "
           "annotation: it would free this claim's address (podRef dranet:<claim UID>) while the pod uses it. "
           "Keep DRA claims in the local store or an nv-ipam pool (ipam.poolName), or, when no whereabouts "
           "reconciler runs in the cluster (rdmanetctl reconcile keeps claim entries), say so with "
           "\"whereaboutsReconciler\": \"absent\" in the profile";
}

Profile load_profile(const std::string& dir, std::string_view name, const NodePolicy& policy,
                     const std::string& node_name, bool strict) {
    if (!is_valid_profile_name(name))
        throw ProviderError(400, "config.profile \"" + std::string(name).substr(0, 64) +
                                     "\" is not a profile name (1-253 of letters, digits, '.', '_', '-', not starting "
                                     "with '.')");
    const std::string path = dir + "/" + std::string(name) + ".json";
    const base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
        if (errno == ENOENT)
            throw ProviderError(404,
                                "profile \"" + std::string(name) + "\" does not exist on this node (no " + path + ")");
        throw ProviderError(500, "cannot read profile " + path + ": " + std::strerror(errno));
    }
    std::string text;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw ProviderError(500, "cannot read profile " + path + ": " + std::strerror(errno));
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > kMaxProfileBytes) invalid(name, path + " is larger than 1 MiB");
    }
    return parse_profile(name, text, policy, node_name, strict);
}

}  // namespace rdmanet::cni::node::dranet
