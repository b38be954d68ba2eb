// nv-ipam's IPPool and CIDRPool read and validated: see pool.hpp.
#include "rdmanet/ipam/nvipam/pool.hpp"

#include <algorithm>
#include <set>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/nvipam/blocks.hpp"

namespace rdmanet::ipam::nvipam {

namespace {

using json = nlohmann::json;
using base::IpAddress;
using base::IpNetwork;

std::string q(const std::string& s) { return "\"" + s + "\""; }

// Reads one object's fields with messages that name "<pool>: spec.x[i].y".
struct Reader {
    const std::string& where;

    [[noreturn]] void fail(const std::string& field, const std::string& why) const {
        config_error(where + ": " + field + " " + why);
    }
    std::optional<std::string> text(const json& o, const char* key, const std::string& field) const {
        if (!o.is_object() || !o.contains(key) || o[key].is_null()) return std::nullopt;
        if (!o[key].is_string()) fail(field, "must be a string");
        return o[key].get<std::string>();
    }
    IpAddress address(const json& o, const char* key, const std::string& field) const {
        const auto t = text(o, key, field);
        if (!t) fail(field, "is required");
        const auto ip = IpAddress::parse(*t);
        if (!ip) fail(field, q(*t) + " is not a valid IP address");
        return *ip;
    }
    // A CIDR without host bits (nv-ipam refuses "network prefix has host bits set").
    IpNetwork network(const json& o, const char* key, const std::string& field) const {
        const auto t = text(o, key, field);
        if (!t) fail(field, "is required");
        const auto n = IpNetwork::parse(*t);
        if (!n) fail(field, q(*t) + " is not a valid CIDR");
        if (n->masked() != *n) fail(field, q(*t) + ": network prefix has host bits set");
        return *n;
    }
    std::optional<std::int64_t> integer(const json& o, const char* key, const std::string& field) const {
        if (!o.is_object() || !o.contains(key) || o[key].is_null()) return std::nullopt;
        if (!o[key].is_number_integer()) fail(field, "must be an integer");
        return o[key].get<std::int64_t>();
    }
    const json* array(const json& o, const char* key, const std::string& field) const {
        if (!o.is_object() || !o.contains(key) || o[key].is_null()) return nullptr;
        if (!o[key].is_array()) fail(field, "must be a list");
        return &o[key];
    }
};

std::string at(const std::string& field, std::size_t i) { return field + "[" + std::to_string(i) + "]"; }

std::vector<Requirement> parse_requirements(const Reader& r, const json& term, const char* key,
                                            const std::string& field) {
    std::vector<Requirement> out;
    const json* list = r.array(term, key, field);
    for (std::size_t i = 0; list && i < list->size(); ++i) {
        const json& e = (*list)[i];
        const std::string f = at(field, i);
        if (!e.is_object()) r.fail(f, "must be an object {key, operator, values}");
        Requirement req;
        req.key = r.text(e, "key", f + ".key").value_or("");
        req.op = r.text(e, "operator", f + ".operator").value_or("");
        if (req.key.empty()) r.fail(f + ".key", "is required");
        static const std::set<std::string> ops{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
        if (!ops.count(req.op))
            r.fail(f + ".operator", q(req.op) + " is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt");
        if (const json* values = r.array(e, "values", f + ".values")) {
            for (std::size_t j = 0; j < values->size(); ++j) {
                if (!(*values)[j].is_string()) r.fail(at(f + ".values", j), "must be a string");
                req.values.push_back((*values)[j].get<std::string>());
            }
        }
        const bool needs_values = req.op == "In" || req.op == "NotIn";
        const bool needs_one = req.op == "Gt" || req.op == "Lt";
        if (needs_values && req.values.empty()) r.fail(f + ".values", "must be non-empty for operator " + req.op);
        if (needs_one && req.values.size() != 1) r.fail(f + ".values", "must have one value for operator " + req.op);
        if ((req.op == "Exists" || req.op == "DoesNotExist") && !req.values.empty())
            r.fail(f + ".values", "must be empty for operator " + req.op);
        if (std::string_view(key) == "matchFields" && req.key != "metadata.name")
            r.fail(f + ".key", q(req.key) + ": matchFields supports only metadata.name");
        out.push_back(std::move(req));
    }
    return out;
}

NodeSelector parse_selector(const Reader& r, const json& sel) {
    if (!sel.is_object()) r.fail("spec.nodeSelector", "must be an object {nodeSelectorTerms: [...]}");
    NodeSelector out;
    const json* terms = r.array(sel, "nodeSelectorTerms", "spec.nodeSelector.nodeSelectorTerms");
    if (!terms || terms->empty()) r.fail("spec.nodeSelector.nodeSelectorTerms", "must have at least one term");
    for (std::size_t i = 0; i < terms->size(); ++i) {
        const std::string f = at("spec.nodeSelector.nodeSelectorTerms", i);
        if (!(*terms)[i].is_object()) r.fail(f, "must be an object");
        SelectorTerm t;
        t.expressions = parse_requirements(r, (*terms)[i], "matchExpressions", f + ".matchExpressions");
        t.fields = parse_requirements(r, (*terms)[i], "matchFields", f + ".matchFields");
        out.terms.push_back(std::move(t));
    }
    return out;
}

std::vector<AddressRange> parse_exclusions(const Reader& r, const json& spec, const IpNetwork& subnet) {
    std::vector<AddressRange> out;
    const json* list = r.array(spec, "exclusions", "spec.exclusions");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
        const std::string f = at("spec.exclusions", i);
        const IpAddress a = r.address((*list)[i], "startIP", f + ".startIP");
        const IpAddress b = r.address((*list)[i], "endIP", f + ".endIP");
        if (!subnet.contains(a)) r.fail(f + ".startIP", a.str() + " is not part of the " + subnet.str() + " subnet");
        if (!subnet.contains(b)) r.fail(f + ".endIP", b.str() + " is not part of the " + subnet.str() + " subnet");
        if (b < a) r.fail(f, "endIP should be equal or greater than startIP");
        out.push_back({a, b});
    }
    return out;
}

std::vector<IndexRange> parse_index_exclusions(const Reader& r, const json& spec, std::uint64_t max_index,
                                               const std::string& unit) {
    std::vector<IndexRange> out;
    const json* list = r.array(spec, "perNodeExclusions", "spec.perNodeExclusions");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
        const std::string f = at("spec.perNodeExclusions", i);
        const auto s = r.integer((*list)[i], "startIndex", f + ".startIndex");
        const auto e = r.integer((*list)[i], "endIndex", f + ".endIndex");
        if (!s) r.fail(f + ".startIndex", "is required");
        if (!e) r.fail(f + ".endIndex", "is required");
        if (*s < 0) r.fail(f + ".startIndex", "must be non-negative");
        if (*e < 0) r.fail(f + ".endIndex", "must be non-negative");
        if (*e < *s) r.fail(f, "endIndex must be greater than or equal to startIndex");
        const std::string outside =
            "index is outside of the per-node " + unit + " range (max: " + std::to_string(max_index) + ")";
        if (static_cast<std::uint64_t>(*s) > max_index) r.fail(f + ".startIndex", std::to_string(*s) + ": " + outside);
        if (static_cast<std::uint64_t>(*e) > max_index) r.fail(f + ".endIndex", std::to_string(*e) + ": " + outside);
        out.push_back({static_cast<std::uint64_t>(*s), static_cast<std::uint64_t>(*e)});
    }
    return out;
}

std::vector<IpNetwork> parse_routes(const Reader& r, const json& spec, const IpNetwork& subnet, bool default_gateway) {
    std::vector<IpNetwork> out;
    const json* list = r.array(spec, "routes", "spec.routes");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
        const std::string f = at("spec.routes", i) + ".dst";
        const auto t = r.text((*list)[i], "dst", f);
        if (!t) r.fail(f, "is required");
        const auto dst = IpNetwork::parse(*t);
        if (!dst) r.fail(f, q(*t) + " is not a valid CIDR");
        if (dst->address.family() != subnet.address.family()) r.fail(f, q(*t) + " is not of the pool's address family");
        if (default_gateway && dst->prefix == 0)
            r.fail(f, q(*t) + " is the default route, which spec.defaultGateway already adds");
        out.push_back(*dst);
    }
    return out;
}

// A status entry, or nullopt when it does not parse (the controller drops those).
std::optional<NodeAllocation> parse_allocation(const json& e, PoolType type) {
    if (!e.is_object() || !e.contains("nodeName") || !e["nodeName"].is_string()) return std::nullopt;
    NodeAllocation a;
    a.node = e["nodeName"].get<std::string>();
    auto text = [&](const char* key) -> std::string {
        return e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string();
    };
    if (type == PoolType::ippool) {
        const auto s = IpAddress::parse(text("startIP"));
        const auto t = IpAddress::parse(text("endIP"));
        if (!s || !t) return std::nullopt;
        a.start = *s;
        a.end = *t;
        a.prefix = IpNetwork{*s, s->bits()};
    } else {
        const auto p = IpNetwork::parse(text("prefix"));
        if (!p || p->masked() != *p) return std::nullopt;
        a.prefix = *p;
        a.start = p->first();
        a.end = p->last();
        if (const std::string gw = text("gateway"); !gw.empty()) {
            const auto g = IpAddress::parse(gw);
            if (!g) return std::nullopt;
            a.gateway = *g;
        }
    }
    return a;
}

// RFC 1123 label, as CNI network names (nv-ipam requires pool names to be valid network names).
bool valid_pool_name(const std::string& name) {
    if (name.empty() || name.size() > 253) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_')) return false;
    return true;
}

std::uint64_t host_count(const IpNetwork& n) {
    const int host_bits = n.address.bits() - n.prefix;
    return host_bits >= 63 ? UINT64_MAX : (std::uint64_t{1} << host_bits);
}

// A subnet holding the unspecified address (0.0.0.0, ::) hands it out: every /0 pool does, and so
// does any other subnet that starts there (0.0.0.0/8 with /32 node subnets gives the first node
// 0.0.0.0/32). No host has that address; the webhook lets it through, rdmanet does not.
void refuse_unspecified(const Reader& r, const IpNetwork& subnet, const std::string& field) {
    if (subnet.first().to_u128() != 0) return;
    r.fail(field, q(subnet.str()) + " holds the unspecified address " + subnet.first().str() +
                      ", which is no host's address" +
                      (subnet.prefix == 0 ? " (prefix length 0 is every address of the family)" : "") +
                      ": use a subnet of host addresses");
}

void parse_ippool_spec(const Reader& r, const json& spec, Pool& p) {
    p.subnet = r.network(spec, "subnet", "spec.subnet");
    refuse_unspecified(r, p.subnet, "spec.subnet");
    const auto size = r.integer(spec, "perNodeBlockSize", "spec.perNodeBlockSize");
    if (!size || *size < 2) r.fail("spec.perNodeBlockSize", "must be at least 2");
    p.block_size = static_cast<std::uint64_t>(*size);
    const std::uint64_t count = host_count(p.subnet);
    if (count != UINT64_MAX && (count < 2 || count - 2 < p.block_size))
        r.fail("spec.perNodeBlockSize",
               std::to_string(*size) + " is larger then amount of IPs available in the subnet " + p.subnet.str());
    if (const auto gw = r.text(spec, "gateway", "spec.gateway"); gw && !gw->empty()) {
        const auto ip = IpAddress::parse(*gw);
        if (!ip) r.fail("spec.gateway", q(*gw) + " is invalid IP address");
        if (!p.subnet.contains(*ip)) r.fail("spec.gateway", q(*gw) + " is not part of the subnet " + p.subnet.str());
        p.gateway = *ip;
    }
    p.exclusions = parse_exclusions(r, spec, p.subnet);
    p.node_exclusions = parse_index_exclusions(r, spec, p.block_size - 1, "block");
    if (p.default_gateway && !p.gateway) r.fail("spec.defaultGateway", "cannot be true if spec.gateway is not set");
    p.routes = parse_routes(r, spec, p.subnet, p.default_gateway);
}

void parse_cidrpool_spec(const Reader& r, const json& spec, Pool& p) {
    p.subnet = r.network(spec, "cidr", "spec.cidr");
    refuse_unspecified(r, p.subnet, "spec.cidr");
    const int bits = p.subnet.address.bits();
    if (const auto gi = r.integer(spec, "gatewayIndex", "spec.gatewayIndex")) {
        if (*gi < 0) r.fail("spec.gatewayIndex", "must not be negative");
        p.gateway_index = static_cast<std::uint64_t>(*gi);
    }
    const auto prefix = r.integer(spec, "perNodeNetworkPrefix", "spec.perNodeNetworkPrefix");
    if (!prefix || *prefix <= 0 || *prefix > bits || *prefix < p.subnet.prefix)
        r.fail("spec.perNodeNetworkPrefix", (prefix ? std::to_string(*prefix) : std::string("(unset)")) +
                                                " must be between the prefix of spec.cidr (" +
                                                std::to_string(p.subnet.prefix) + ") and " + std::to_string(bits));
    p.node_prefix = static_cast<int>(*prefix);
    const IpNetwork first_subnet{p.subnet.address, p.node_prefix};
    if (p.gateway_index && !gateway_at(first_subnet, *p.gateway_index))
        r.fail("spec.gatewayIndex", std::to_string(*p.gateway_index) + ": gateway index is outside of the node prefix");
    // A single-address node subnet whose address is the gateway leaves the node nothing to hand out.
    if (p.gateway_index && p.node_prefix == bits)
        r.fail("spec.gatewayIndex",
               std::to_string(*p.gateway_index) + " with spec.perNodeNetworkPrefix " + std::to_string(bits) +
                   ": the node subnet's only address is the gateway, which leaves no address to hand out");
    p.exclusions = parse_exclusions(r, spec, p.subnet);
    const std::uint64_t count = host_count(first_subnet);
    p.node_exclusions = parse_index_exclusions(r, spec, count == UINT64_MAX ? UINT64_MAX : count - 1, "subnet");
    std::set<std::string> nodes, prefixes;
    if (const json* list = r.array(spec, "staticAllocations", "spec.staticAllocations")) {
        for (std::size_t i = 0; i < list->size(); ++i) {
            const std::string f = at("spec.staticAllocations", i);
            StaticAllocation s;
            s.node = r.text((*list)[i], "nodeName", f + ".nodeName").value_or("");
            s.prefix = r.network((*list)[i], "prefix", f + ".prefix");
            if (!p.subnet.contains(s.prefix.address) || s.prefix.address.family() != p.subnet.address.family())
                r.fail(f + ".prefix", q(s.prefix.str()) + ": prefix is not part of the pool cidr");
            if (s.prefix.prefix != p.node_prefix)
                r.fail(f + ".prefix", q(s.prefix.str()) + ": prefix size doesn't match spec.perNodeNetworkPrefix");
            if (const auto gw = r.text((*list)[i], "gateway", f + ".gateway"); gw && !gw->empty()) {
                const auto ip = IpAddress::parse(*gw);
                if (!ip) r.fail(f + ".gateway", q(*gw) + " is not a valid IP");
                if (!s.prefix.contains(*ip)) r.fail(f + ".gateway", q(*gw) + " is outside of the node prefix");
                if (s.prefix.prefix == bits)
                    r.fail(f + ".gateway", q(*gw) + " is the " + s.prefix.str() +
                                               " prefix's only address, which leaves no address to hand out");
                s.gateway = *ip;
            }
            if (!s.node.empty() && !nodes.insert(s.node).second)
                r.fail("spec.staticAllocations", "contains multiple entries for node " + s.node);
            if (!prefixes.insert(s.prefix.str()).second)
                r.fail("spec.staticAllocations", "contains multiple entries for prefix " + s.prefix.str());
            p.statics.push_back(std::move(s));
        }
    }
    if (!p.gateway_index) {
        if (p.default_gateway) r.fail("spec.defaultGateway", "cannot be true if spec.gatewayIndex is not set");
        if (spec.contains("routes") && spec["routes"].is_array() && !spec["routes"].empty())
            r.fail("spec.routes", "cannot be set if spec.gatewayIndex is not set");
    }
    p.routes = parse_routes(r, spec, p.subnet, p.default_gateway);
}

bool requirement_holds(const Requirement& req, const std::optional<std::string>& value) {
    auto in = [&] { return value && std::find(req.values.begin(), req.values.end(), *value) != req.values.end(); };
    if (req.op == "In") return in();
    if (req.op == "NotIn") return !in();
    if (req.op == "Exists") return value.has_value();
    if (req.op == "DoesNotExist") return !value.has_value();
    if (req.op == "Gt" || req.op == "Lt") {
        if (!value) return false;
        try {
            std::size_t used = 0, used_bound = 0;
            const long long have = std::stoll(*value, &used);
            const long long bound = std::stoll(req.values.at(0), &used_bound);
            if (used != value->size() || used_bound != req.values[0].size()) return false;
            return req.op == "Gt" ? have > bound : have < bound;
        } catch (const std::exception&) {
            return false;
        }
    }
    return false;
}

}  // namespace

std::string_view plural(PoolType type) { return type == PoolType::ippool ? "ippools" : "cidrpools"; }
std::string_view kind(PoolType type) { return type == PoolType::ippool ? "IPPool" : "CIDRPool"; }

PoolType parse_pool_type(std::string_view text, const std::string& field) {
    if (text == "ippool" || text.empty()) return PoolType::ippool;
    if (text == "cidrpool") return PoolType::cidrpool;
    config_error(field + " " + q(std::string(text)) + " is not a pool type: use \"ippool\" or \"cidrpool\"");
}

std::string Pool::where() const { return std::string(kind(type)) + " " + ns + "/" + name; }

const NodeAllocation* Pool::allocation_of(std::string_view node) const {
    for (const auto& a : allocations)
        if (a.node == node) return &a;
    return nullptr;
}

Pool parse_pool(const json& object, PoolType type) {
    Pool p;
    p.type = type;
    // Members by reference: a pool's status holds an entry per node (tens of thousands), and an
    // unread field may be deep; neither is copied.
    static const json kEmpty = json::object();
    auto member = [&object](const char* key) -> const json& {
        return object.is_object() && object.contains(key) ? object[key] : kEmpty;
    };
    const json& md = member("metadata");
    // Read as text only when they are text: a number where a name belongs is named as such, not
    // reported as the JSON library's type error.
    auto md_text = [&md](const char* key) {
        return md.is_object() && md.contains(key) && md[key].is_string() ? md[key].get<std::string>() : std::string();
    };
    p.name = md_text("name");
    p.ns = md_text("namespace");
    p.resource_version = md_text("resourceVersion");
    const std::string where = p.where();
    const Reader r{where};
    if (!object.is_object()) r.fail("(the object)", "must be a JSON object");
    if (!md.is_object()) r.fail("metadata", "must be an object");
    for (const char* key : {"name", "namespace", "resourceVersion"})
        if (md.contains(key) && !md[key].is_string()) r.fail(std::string("metadata.") + key, "must be a string");
    if (!valid_pool_name(p.name))
        r.fail("metadata.name", q(p.name) + ": invalid pool name, should be compatible with CNI network name");
    const json& spec = member("spec");
    if (!spec.is_object()) r.fail("spec", "must be an object");
    if (spec.contains("defaultGateway") && !spec["defaultGateway"].is_null()) {
        if (!spec["defaultGateway"].is_boolean()) r.fail("spec.defaultGateway", "must be true or false");
        p.default_gateway = spec["defaultGateway"].get<bool>();
    }
    if (type == PoolType::ippool) {
        parse_ippool_spec(r, spec, p);
    } else {
        parse_cidrpool_spec(r, spec, p);
    }
    if (spec.contains("nodeSelector") && !spec["nodeSelector"].is_null())
        p.selector = parse_selector(r, spec["nodeSelector"]);
    const json& status = member("status");
    if (status.is_object() && status.contains("allocations") && status["allocations"].is_array()) {
        for (const auto& e : status["allocations"])
            if (auto a = parse_allocation(e, type)) p.allocations.push_back(std::move(*a));
    }
    return p;
}

json allocations_json(const Pool& pool, std::vector<NodeAllocation> allocations) {
    std::sort(allocations.begin(), allocations.end(),
              [](const NodeAllocation& a, const NodeAllocation& b) { return a.node < b.node; });
    json out = json::array();
    for (const auto& a : allocations) {
        if (pool.type == PoolType::ippool) {
            out.push_back({{"nodeName", a.node}, {"startIP", a.start.str()}, {"endIP", a.end.str()}});
        } else {
            json e = {{"nodeName", a.node}, {"prefix", a.prefix.str()}};
            if (a.gateway) e["gateway"] = a.gateway->str();
            out.push_back(std::move(e));
        }
    }
    return out;
}

bool matches(const NodeSelector& selector, const std::map<std::string, std::string>& labels,
             std::string_view node_name) {
    for (const auto& term : selector.terms) {
        if (term.expressions.empty() && term.fields.empty()) continue;  // an empty term matches nothing
        bool all = true;
        for (const auto& req : term.expressions) {
            const auto it = labels.find(req.key);
            all = all &&
                  requirement_holds(req, it == labels.end() ? std::nullopt : std::optional<std::string>(it->second));
        }
        for (const auto& req : term.fields) all = all && requirement_holds(req, std::string(node_name));
        if (all) return true;
    }
    return false;
}

}  // namespace rdmanet::ipam::nvipam
