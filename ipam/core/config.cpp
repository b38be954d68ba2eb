// Parsing of the whereabouts-style ipam object. Pure: the flat-file read is in flat_file.cpp.
#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/core/node_slice_size.hpp"

#include <algorithm>
#include <functional>

#include "rdmanet/base/json_fields.hpp"
#include "rdmanet/base/confined_file.hpp"
#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::ipam {

namespace {

using nlohmann::json;
using base::IpAddress;
using base::IpNetwork;

std::string q(std::string_view text) {
    std::string out(1, '"');
    out.append(text).push_back('"');
    return out;
}

const char* family_name(const IpAddress& ip) { return ip.is_v4() ? "IPv4" : "IPv6"; }

// Type errors in the ipam object are configuration errors (code 7) naming the member.
struct RaiseConfigError {
    [[noreturn]] void operator()(std::string message, std::string /*details*/) const {
        config_error(std::move(message));
    }
};
// The members of the ipam object; null counts as unset (as whereabouts reads it).
using Fields = base::JsonFields<RaiseConfigError>;

constexpr std::string_view kRangeShape =
    "an object {\"range\": ..., \"range_start\": ..., \"range_end\": ..., \"exclude\": [...]}";

IpAddress parse_ip(const std::string& text, const std::string& field) {
    auto ip = IpAddress::parse(text);
    if (!ip) config_error(field + " " + q(text) + " is not an IP address");
    return *ip;
}

IpNetwork parse_cidr(const std::string& text, const std::string& field) {
    auto net = IpNetwork::parse(text);
    if (!net) config_error(field + " " + q(text) + " is not a CIDR (address/prefix-length)");
    return *net;
}

void require_family(const IpAddress& ip, const IpNetwork& cidr, const std::string& field,
                    const std::string& range_field) {
    if (ip.family() != cidr.address.family()) {
        config_error(field + " " + ip.str() + " is " + family_name(ip) + " but " + range_field + " " + cidr.str() +
                     " is " + family_name(cidr.address) + ": one range cannot mix the two");
    }
}

// The intersection of [net.first, net.last] with the range's CIDR, as offsets; nullopt when disjoint.
std::optional<Interval> offsets_within(const IpNetwork& net, const IpNetwork& cidr) {
    const uint128 base = cidr.address.to_u128();
    const uint128 top = cidr.last().to_u128();
    const uint128 lo = std::max(net.first().to_u128(), base);
    const uint128 hi = std::min(net.last().to_u128(), top);
    if (lo > hi) return std::nullopt;
    return Interval{lo - base, hi - base};
}

// One range entry: the top-level keys (path "ipam") or one ipRanges element
// (path "ipam.ipRanges[i]"). The same keys in both places: range, range_start, range_end, exclude.
Range parse_range_entry(const Fields& entry, const std::string& range_field) {
    const std::string range_key = entry.name("range");
    auto range_text = entry.string("range");
    if (!range_text) config_error(range_key + " is missing");

    Range r;
    r.field = range_field;
    std::optional<IpAddress> start, end;
    const auto dash = range_text->find('-');
    if (dash != std::string::npos) {
        // "a.b.c.d-a.b.c.e/nn": the prefix length belongs to the second address.
        const std::string left = range_text->substr(0, dash);
        const std::string right = range_text->substr(dash + 1);
        auto net = IpNetwork::parse(right);
        auto first_ip = IpAddress::parse(left);
        if (!net || !first_ip) {
            config_error(range_key + " " + q(*range_text) +
                         " is neither a CIDR nor a start-end/prefix range (e.g. 10.0.0.10-10.0.0.20/24)");
        }
        r.cidr = net->masked();
        require_family(*first_ip, r.cidr, range_key + " start", range_key);
        if (!r.cidr.contains(*first_ip)) {
            config_error(range_key + " " + q(*range_text) + ": start " + first_ip->str() + " is outside " +
                         r.cidr.str());
        }
        start = *first_ip;
        end = net->address;
    } else {
        auto net = IpNetwork::parse(*range_text);
        if (!net) {
            config_error(range_key + " " + q(*range_text) +
                         " is neither a CIDR nor a start-end/prefix range (e.g. 10.0.0.10-10.0.0.20/24)");
        }
        r.cidr = net->masked();  // whereabouts normalises 192.168.2.225/28 to 192.168.2.224/28
    }

    // Explicit range_start/range_end; with the start-end form they must agree with it.
    auto bound = [&](std::string_view key, std::optional<IpAddress>& slot) {
        const std::string field = entry.name(key);
        auto text = entry.string(key);
        if (!text) return;
        const IpAddress ip = parse_ip(*text, field);
        require_family(ip, r.cidr, field, range_key);
        if (!r.cidr.contains(ip)) {
            config_error(field + " " + q(*text) + " is outside " + range_key + " " + r.cidr.str());
        }
        if (slot && *slot != ip) {
            config_error(field + " " + q(*text) + " contradicts " + range_key + " " + q(*range_text));
        }
        slot = ip;
    };
    bound("range_start", start);
    bound("range_end", end);
    if (start && end && *start > *end) {
        config_error(entry.name("range_start") + " " + start->str() + " is after " + entry.name("range_end") + " " +
                     end->str());
    }

    // Network, broadcast (and later the gateway) are never handed out, whatever start/end say.
    const Interval usable = usable_offsets(r.cidr);
    r.first = start ? std::max(*r.offset_of(*start), usable.lo) : usable.lo;
    r.last = end ? std::min(*r.offset_of(*end), usable.hi) : usable.hi;
    if (r.first > r.last) {
        config_error(range_key + " " + r.cidr.str() +
                     ": range_start..range_end holds no usable address "
                     "(network and broadcast addresses are never handed out)");
    }

    const std::string exclude_field = entry.name("exclude");
    const auto excludes = entry.strings("exclude");
    std::vector<Interval> excluded;
    for (std::size_t i = 0; i < excludes.size(); ++i) {
        const std::string field = exclude_field + "[" + std::to_string(i) + "]";
        auto net = IpNetwork::parse_address_or_cidr(excludes[i]);
        if (!net) config_error(field + " " + q(excludes[i]) + " is neither an IP address nor a CIDR");
        require_family(net->address, r.cidr, field, range_key);
        // Host bits are cleared: "10.0.0.5/30" excludes the whole /30, which is what whereabouts
        // really does (Go's ParseCIDR), so migrated pools keep the same free addresses.
        if (auto iv = offsets_within(net->masked(), r.cidr)) excluded.push_back(*iv);
    }
    r.excluded = merge_intervals(std::move(excluded));
    return r;
}

// Clips the merged exclusions to [first, last]: what lies outside is unreachable anyway, and
// clipped exclusions keep describe() and the search short.
void clip_exclusions(Range& r) {
    std::vector<Interval> clipped;
    for (const auto& iv : r.excluded) {
        const uint128 lo = std::max(iv.lo, r.first);
        const uint128 hi = std::min(iv.hi, r.last);
        if (lo <= hi) clipped.push_back({lo, hi});
    }
    r.excluded = std::move(clipped);
}

std::vector<Route> parse_routes(const Fields& ipam) {
    std::vector<Route> out;
    ipam.for_each_object(
        "routes",
        [&](const Fields& item) {
            auto dst = item.string("dst");
            if (!dst) config_error(item.name("dst") + " is missing");
            Route route;
            route.dst = parse_cidr(*dst, item.name("dst"));
            if (auto gw = item.string("gw")) route.gw = parse_ip(*gw, item.name("gw"));
            out.push_back(std::move(route));
        },
        "an object {\"dst\": CIDR, \"gw\": IP}");
    if (auto problem = base::routes_problem(out, ipam.name("routes")); !problem.empty()) config_error(problem);
    return out;
}

Dns parse_dns(const Fields& ipam) {
    const auto fields = ipam.child("dns");
    if (!fields) return {};
    Dns dns;
    dns.nameservers = fields->strings("nameservers");
    dns.domain = fields->string("domain").value_or("");
    dns.search = fields->strings("search");
    dns.options = fields->strings("options");
    return dns;
}

std::vector<StaticAddress> parse_addresses(const Fields& ipam) {
    std::vector<StaticAddress> out;
    ipam.for_each_object(
        "addresses",
        [&](const Fields& item) {
            auto address = item.string("address");
            if (!address) config_error(item.name("address") + " is missing");
            StaticAddress sa{parse_cidr(*address, item.name("address")), std::nullopt};
            if (auto gw = item.string("gateway")) sa.gateway = parse_ip(*gw, item.name("gateway"));
            out.push_back(sa);
        },
        "an object {\"address\": CIDR, \"gateway\": IP}");
    return out;
}

NvPoolKeys parse_nv_keys(const Fields& ipam) {
    NvPoolKeys nv;
    nv.enabled = ipam.has("poolName") || ipam.has("poolType");
    if (!nv.enabled) return nv;
    if (auto names = ipam.string("poolName")) {
        std::size_t start = 0;
        while (start <= names->size()) {
            std::size_t end = names->find(',', start);
            if (end == std::string::npos) end = names->size();
            std::string name = names->substr(start, end - start);
            while (!name.empty() && name.front() == ' ') name.erase(0, 1);
            while (!name.empty() && name.back() == ' ') name.pop_back();
            const bool valid = !name.empty() && name.size() <= 253 &&
                               name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-._") == std::string::npos;
            if (!valid) config_error(ipam.name("poolName") + " " + q(*names) + ": " + q(name) + " is not a pool name");
            nv.pools.push_back(std::move(name));
            start = end + 1;
        }
        if (nv.pools.size() > 2)
            config_error(ipam.name("poolName") + " " + q(*names) + " names more than two pools (one IPv4, one IPv6)");
    }
    if (auto type = ipam.string("poolType")) {
        if (*type != "ippool" && *type != "cidrpool" && !type->empty())
            config_error(ipam.name("poolType") + " " + q(*type) +
                         " is not a pool type: use \"ippool\" or \"cidrpool\"");
        if (!type->empty()) nv.type = *type;
    }
    if (auto ns = ipam.string("poolNamespace")) {
        if (ns->empty() || ns->size() > 63 ||
            ns->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos)
            config_error(ipam.name("poolNamespace") + " " + q(*ns) + " is not a namespace name");
        nv.ns = *ns;
    }
    return nv;
}

StoreConfig parse_store(const Fields& ipam) {
    StoreConfig store;
    if (auto ds = ipam.string("datastore")) {
        if (*ds == "local" || ds->empty()) {
            store.datastore = Datastore::local;
        } else if (*ds == "kubernetes") {
            store.datastore = Datastore::kubernetes;
        } else {
            config_error("ipam.datastore " + q(*ds) + " is not supported: use \"local\" or \"kubernetes\"");
        }
    }
    if (auto dir = ipam.string("data_dir")) {
        if (dir->empty() || dir->front() != '/') {
            config_error("ipam.data_dir " + q(*dir) + " must be an absolute path");
        }
        store.data_dir = *dir;
    }
    if (const auto k8s = ipam.child("kubernetes")) store.kubeconfig = k8s->string("kubeconfig").value_or("");
    if (auto size = ipam.string("node_slice_size")) {
        store.node_slice_prefix = parse_node_slice_size(*size);
    }
    if (auto path = ipam.string("configuration_path"); path && !path->empty()) {
        const auto slash = path->rfind('/');
        if (slash != std::string::npos && slash > 0) store.node_config_dir = path->substr(0, slash);
    }
    return store;
}

}  // namespace

IpamConfig parse_ipam_config(const json& ipam_object, Strictness strictness) {
    const Fields ipam = Fields::of_object(ipam_object, "ipam", RaiseConfigError{});
    const bool strict = strictness == Strictness::strict;
    // In lenient mode (DEL, GC) a section that does not parse is left at its default.
    auto section = [strict](const std::function<void()>& parse) {
        try {
            parse();
        } catch (const IpamError&) {
            if (strict) throw;
        }
    };

    IpamConfig c;
    // The store must be found even by DEL: its errors are fatal in both modes.
    c.store = parse_store(ipam);
    section([&] { c.type = ipam.string("type").value_or(""); });
    section([&] { c.network_name = ipam.string("network_name").value_or(""); });
    section([&] {
        if (auto overlapping = ipam.boolean("enable_overlapping_ranges")) c.enable_overlapping_ranges = *overlapping;
    });
    section([&] { c.log_file = ipam.string("log_file").value_or(""); });
    section([&] { c.log_level = ipam.string("log_level").value_or(""); });
    section([&] { c.configuration_path = ipam.string("configuration_path").value_or(""); });
    section([&] { c.routes = parse_routes(ipam); });
    section([&] { c.dns = parse_dns(ipam); });
    section([&] { c.addresses = parse_addresses(ipam); });
    section([&] {
        if (auto gw = ipam.string("gateway")) c.gateway = parse_ip(*gw, ipam.name("gateway"));
    });

    section([&] { c.nv = parse_nv_keys(ipam); });
    if (c.nv.enabled) {
        // nv-ipam's pools, not ranges: the ranges come from the node's block when the verb runs.
        section([&] {
            for (const char* key : {"range", "ipRanges", "node_slice_size"})
                if (ipam.has(key))
                    config_error(ipam.name(key) + " cannot be combined with ipam.poolName (nv-ipam's pools)");
        });
        c.store.datastore = Datastore::kubernetes;
        return c;
    }
    // Ranges: the top-level range first (whereabouts prepends it), then ipRanges in order.
    if (ipam.has("range")) {
        section([&] { c.ranges.push_back(parse_range_entry(ipam, ipam.name("range"))); });
    } else {
        section([&] {
            for (const char* key : {"range_start", "range_end", "exclude"}) {
                if (ipam.has(key)) config_error(ipam.name(key) + " is set but ipam.range is not");
            }
        });
    }
    // One section per entry: in lenient mode an entry that does not parse is dropped alone.
    const json* list = nullptr;
    section([&] { list = ipam.array("ipRanges"); });
    for (std::size_t i = 0; list && i < list->size(); ++i) {
        section([&] {
            const Fields entry = ipam.object_at("ipRanges", *list, i, kRangeShape);
            c.ranges.push_back(parse_range_entry(entry, entry.path()));
        });
    }

    section([&] {
        if (!c.store.node_slice_prefix) return;
        for (const Range& r : c.ranges) check_node_slice_size(r, *c.store.node_slice_prefix);
    });
    section([&] {
        if (c.ranges.empty()) config_error("ipam has no range: set ipam.range or ipam.ipRanges");
        // Two entries on one pool would give one pod two addresses from one pool under one
        // podRef+ifname key, which the stickiness rule cannot tell apart.
        for (std::size_t i = 0; i < c.ranges.size(); ++i) {
            for (std::size_t j = 0; j < i; ++j) {
                if (c.ranges[i].cidr == c.ranges[j].cidr) {
                    config_error(c.ranges[i].field + " " + c.ranges[i].cidr.str() + " is the same pool as " +
                                 c.ranges[j].field);
                }
            }
        }
    });

    // The gateway is returned with the addresses of its family and never handed out in a range
    // that contains it (whereabouts hands it out).
    section([&] {
        if (!c.gateway) return;
        bool family_seen = false;
        for (auto& r : c.ranges) {
            if (r.cidr.address.family() != c.gateway->family()) continue;
            family_seen = true;
            r.gateway = c.gateway;
            if (auto off = r.offset_of(*c.gateway)) {
                r.excluded.push_back({*off, *off});
                r.excluded = merge_intervals(std::move(r.excluded));
            }
        }
        if (!family_seen && !c.ranges.empty()) {
            config_error("ipam.gateway " + c.gateway->str() + " is " + family_name(*c.gateway) + " but no range is");
        }
    });
    for (auto& r : c.ranges) clip_exclusions(r);
    return c;
}

json merge_flat_file(const json& nad_ipam, const json& flat) {
    json out = nad_ipam.is_object() ? nad_ipam : json::object();
    if (!flat.is_object()) return out;
    for (auto it = flat.begin(); it != flat.end(); ++it) {
        const std::string& key = it.key();
        if (key == "enable_overlapping_ranges" || key == "configuration_path") continue;
        if (key == "kubernetes" && it->is_object()) {
            auto& mine = out["kubernetes"];
            if (mine.is_null()) mine = json::object();
            if (!mine.is_object()) continue;  // the NAD's value wins, even a wrong one (reported by parse)
            for (auto k = it->begin(); k != it->end(); ++k) {
                if (!mine.contains(k.key()) || mine[k.key()].is_null()) mine[k.key()] = *k;
            }
            continue;
        }
        if (!out.contains(key) || out[key].is_null()) out[key] = *it;
    }
    return out;
}

namespace {

// The node policy's refusal for a file key: named key, the value, the allowed place.
[[noreturn]] void refuse_path(const PathLimits& limits, const std::string& key, const std::string& path,
                              const std::string& allowed) {
    const std::string msg = key + " " + q(path) + " is outside what the node policy allows (" + allowed +
                            "): ask the node admin to allow it, or use a path there";
    if (limits.on_refusal) limits.on_refusal(msg);
    config_error(msg);
}

// The ipam object's keys that name a place on the node, each with where the node policy lets it
// point (PathLimits, filled in from the policy by the cni layer): the one list check_path_limits
// walks.
struct PathKey {
    std::string_view object;  // "" for the ipam object itself, else the member object holding the key
    std::string_view key;
    std::vector<std::string> (*allowed)(const PathLimits&);
    bool dir_itself = false;          // a directory key: one of the allowed directories itself is allowed too
    std::string_view always_allowed;  // allowed whatever the limits (the plugin's own default)
};

constexpr PathKey kPathKeys[] = {
    {"", "configuration_path", [](const PathLimits& l) { return l.config_dirs; }, false, ""},
    {"", "log_file", [](const PathLimits& l) { return std::vector<std::string>{l.log_dir}; }, false, ""},
    {"kubernetes", "kubeconfig", [](const PathLimits& l) { return l.kubeconfig_dirs; }, false, ""},
    // The default data dir is the plugin's own; a NAD may only move it within the allowed roots.
    {"", "data_dir", [](const PathLimits& l) { return l.data_dirs; }, true, kDefaultDataDir},
};

void check_path_key(const PathLimits& limits, const Fields& ipam, const PathKey& key) {
    std::optional<Fields> member;
    if (!key.object.empty()) {
        const json* object = ipam.get(key.object);
        if (!object || !object->is_object()) return;  // type errors: parse's job
        member.emplace(*object, ipam.name(key.object), RaiseConfigError{});
    }
    const Fields& holder = member ? *member : ipam;
    const json* v = holder.get(key.key);
    if (!v || !v->is_string() || v->get<std::string>().empty()) return;  // type errors: parse's job
    const std::string path = v->get<std::string>();
    if (path == key.always_allowed) return;
    const auto dirs = key.allowed(limits);
    const bool inside = !base::containing_dir(path, dirs).empty() ||
                        (key.dir_itself && std::find(dirs.begin(), dirs.end(), path) != dirs.end());
    if (!inside) refuse_path(limits, holder.name(key.key), path, base::join_dirs(dirs));
}

}  // namespace

namespace {
IpamConfig with_confinement(IpamConfig config, const PathLimits& limits) {
    if (limits.enforced) {
        config.store.kubeconfig_dirs = limits.kubeconfig_dirs;
        config.store.on_refusal = limits.on_refusal;
    }
    return config;
}
}  // namespace

void check_path_limits(const json& ipam_object, const PathLimits& limits) {
    if (!limits.enforced || !ipam_object.is_object()) return;
    const Fields ipam(ipam_object, "ipam", RaiseConfigError{});
    for (const auto& key : kPathKeys) check_path_key(limits, ipam, key);
}

IpamConfig load_ipam_config(const json& ipam, Strictness strictness, const PathLimits& limits) {
    if (ipam.is_object()) {
        auto it = ipam.find("configuration_path");
        if (it != ipam.end() && it->is_string() && !it->get<std::string>().empty()) {
            const std::string path = it->get<std::string>();
            // Checked before the file is opened; the merged object is checked again below, for
            // the keys the flat file filled in.
            check_path_limits(ipam, limits);
            const std::string confined = limits.enforced ? base::containing_dir(path, limits.config_dirs) : "";
            const json merged = merge_flat_file(ipam, read_flat_file(path, confined));
            check_path_limits(merged, limits);
            return with_confinement(parse_ipam_config(merged, strictness), limits);
        }
    }
    check_path_limits(ipam, limits);
    return with_confinement(parse_ipam_config(ipam, strictness), limits);
}

}  // namespace rdmanet::ipam
