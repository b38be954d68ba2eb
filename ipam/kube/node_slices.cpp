// Node slices, pure part: see node_slices.hpp.
#include "rdmanet/ipam/kube/node_slices.hpp"

#include <algorithm>
#include <set>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/wire.hpp"
#include "rdmanet/ipam/core/naming.hpp"

namespace rdmanet::ipam::kube {

using nlohmann::json;

namespace {

int host_bits(const base::IpNetwork& range, int prefix) { return range.address.bits() - prefix; }

uint128 slice_size(const base::IpNetwork& range, int prefix) {
    const int h = host_bits(range, prefix);
    return h >= 128 ? kU128Max : uint128{1} << h;  // a /0 IPv6 slice is never allowed (check_node_slice_size)
}

// The first offset >= from that `r` may hand out (inside [first, last], not excluded).
std::optional<uint128> next_allocatable(const Range& r, uint128 from) {
    if (from < r.first) from = r.first;
    if (from > r.last) return std::nullopt;
    for (const Interval& iv : r.excluded) {  // merged and sorted
        if (iv.hi < from) continue;
        if (iv.lo > from) break;
        if (iv.hi >= r.last) return std::nullopt;
        from = iv.hi + 1;
    }
    return from <= r.last ? std::optional(from) : std::nullopt;
}

uint128 offset_in_parent(const base::IpNetwork& parent, const base::IpNetwork& slice) {
    return slice.address.to_u128() - parent.masked().address.to_u128();
}

std::optional<int> slice_prefix_of(const std::string& text) {
    std::string_view v = text;
    if (!v.empty() && v.front() == '/') v.remove_prefix(1);
    if (v.empty() || v.size() > 3) return std::nullopt;
    int p = 0;
    for (char c : v) {
        if (c < '0' || c > '9') return std::nullopt;
        p = p * 10 + (c - '0');
    }
    return p;
}

json entry_json(const SliceEntry& e) { return {{"nodeName", e.node}, {"sliceRange", e.slice.str()}}; }

json rv_test(const NodeSlicePool& pool) {
    return {{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", pool.resource_version}};
}

}  // namespace

uint128 slice_count(const base::IpNetwork& range, int prefix) {
    const int shift = prefix - range.prefix;
    if (shift <= 0) return 1;
    if (shift >= 127) return uint128{1} << 127;
    return uint128{1} << shift;
}

base::IpNetwork slice_at(const base::IpNetwork& range, int prefix, uint128 index) {
    const uint128 base = range.masked().address.to_u128();
    return {base::IpAddress::from_u128(range.address.family(), base + index * slice_size(range, prefix)), prefix};
}

std::optional<uint128> slice_index(const base::IpNetwork& range, int prefix, const base::IpNetwork& slice) {
    if (slice.prefix != prefix || slice.address.family() != range.address.family()) return std::nullopt;
    if (slice.masked() != slice || !range.masked().contains(slice.address)) return std::nullopt;
    return offset_in_parent(range, slice) / slice_size(range, prefix);
}

Range slice_range(const Range& parent, const base::IpNetwork& slice) {
    Range r;
    r.cidr = slice.masked();
    r.field = parent.field + " slice " + r.cidr.str();
    const uint128 base = offset_in_parent(parent.cidr, r.cidr);
    const uint128 size_minus_one = slice_size(parent.cidr, slice.prefix) - 1;
    const Interval usable = usable_offsets(r.cidr);
    // The parent's [first, last] in slice offsets, cut to what any IPPool of the slice may use.
    r.first = std::max(usable.lo, parent.first > base ? parent.first - base : uint128{0});
    r.last = parent.last < base ? uint128{0} : std::min(usable.hi, parent.last - base);
    for (const Interval& iv : parent.excluded) {
        if (iv.hi < base || iv.lo > base + size_minus_one) continue;
        const uint128 lo = iv.lo < base ? 0 : iv.lo - base;
        const uint128 hi = std::min(iv.hi - base, size_minus_one);
        if (hi < r.first || lo > r.last) continue;
        r.excluded.push_back({std::max(lo, r.first), std::min(hi, r.last)});
    }
    if (parent.gateway && r.cidr.contains(*parent.gateway)) r.gateway = parent.gateway;
    return r;
}

bool slice_has_usable(const Range& parent, const base::IpNetwork& slice) {
    const uint128 base = offset_in_parent(parent.cidr, slice);
    const uint128 size = slice_size(parent.cidr, slice.prefix);
    const auto n = next_allocatable(parent, base + 1);
    return n && *n <= base + size - 2;
}

PoolKey slice_pool_key(std::string_view network_name, std::string_view node, const base::IpNetwork& slice) {
    // whereabouts: <network_name>-<node>-<normalised slice>, or <node>-<normalised slice>.
    const std::string prefix =
        network_name.empty() ? std::string(node) : std::string(network_name) + "-" + std::string(node);
    return PoolKey{prefix, slice.masked()};
}

std::vector<base::IpNetwork> NodeSlicePool::slices_of(std::string_view node) const {
    std::vector<base::IpNetwork> out;
    for (const auto& e : entries) {
        if (e.node == node) out.push_back(e.slice);
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.address.to_u128() < b.address.to_u128(); });
    return out;
}

std::string NodeSlicePool::holder(const base::IpNetwork& slice) const {
    for (const auto& e : entries) {
        if (e.slice == slice) return e.node;
    }
    return "";
}

json new_node_slice_pool(std::string_view ns, std::string_view name, const base::IpNetwork& range, int slice_prefix) {
    return {{"apiVersion", kApiVersion},
            {"kind", "NodeSlicePool"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec", {{"range", range.masked().str()}, {"sliceSize", "/" + std::to_string(slice_prefix)}}},
            {"status", {{"allocations", json::array()}}}};
}

NodeSlicePool parse_node_slice_pool(const json& o, const base::IpNetwork& range, int slice_prefix) {
    NodeSlicePool p;
    const json& md = o.contains("metadata") && o["metadata"].is_object() ? o["metadata"] : json::object();
    p.name = md.value("name", "");
    p.resource_version = md.value("resourceVersion", "");
    const std::string what = "NodeSlicePool " + p.name;
    if (!o.contains("spec") || !o["spec"].is_object()) throw IpamError(codes::io_failure, what + " has no spec");
    const json& spec = o["spec"];
    const std::string range_text =
        spec.contains("range") && spec["range"].is_string() ? spec["range"].get<std::string>() : "";
    p.slice_size_text =
        spec.contains("sliceSize") && spec["sliceSize"].is_string() ? spec["sliceSize"].get<std::string>() : "";
    const auto stored_range = base::IpNetwork::parse(range_text);
    const auto stored_prefix = slice_prefix_of(p.slice_size_text);
    if (!stored_range || !stored_prefix || stored_range->masked() != range.masked() || *stored_prefix != slice_prefix) {
        config_error(what + " has spec.range \"" + range_text + "\" and spec.sliceSize \"" + p.slice_size_text +
                     "\", but this configuration has range " + range.masked().str() + " and node_slice_size \"/" +
                     std::to_string(slice_prefix) + "\": another network uses the name " + p.name +
                     " (give this one its own network_name), or the configuration changed (a NodeSlicePool's range "
                     "and slice size cannot change while nodes hold slices of it)");
    }
    p.range = stored_range->masked();
    p.slice_prefix = slice_prefix;
    if (auto st = o.find("status"); st != o.end() && st->is_object()) {
        p.has_status = true;
        if (auto a = st->find("allocations"); a != st->end() && a->is_array()) {
            for (const auto& e : *a) {
                const std::string slice_text = e.is_object() ? e.value("sliceRange", "") : "";
                const auto slice = base::IpNetwork::parse(slice_text);
                if (!slice || !slice_index(p.range, slice_prefix, *slice)) {
                    throw IpamError(codes::io_failure, what + " lists slice \"" + slice_text + "\", which is not a /" +
                                                           std::to_string(slice_prefix) + " slice of " + p.range.str());
                }
                p.entries.push_back({e.value("nodeName", ""), slice->masked()});
            }
        }
    }
    return p;
}

std::optional<NodeSlicePool> parse_stored_node_slice_pool(const json& o) {
    if (!o.is_object() || !o.contains("spec") || !o["spec"].is_object()) return std::nullopt;
    const json& spec = o["spec"];
    const auto range = base::IpNetwork::parse(spec.value("range", ""));
    const auto prefix = slice_prefix_of(
        spec.contains("sliceSize") && spec["sliceSize"].is_string() ? spec["sliceSize"].get<std::string>() : "");
    if (!range || !prefix || *prefix < range->prefix || *prefix > range->address.bits()) return std::nullopt;
    try {
        return parse_node_slice_pool(o, *range, *prefix);
    } catch (const IpamError&) {
        return std::nullopt;
    }
}

std::optional<base::IpNetwork> free_slice(const NodeSlicePool& pool, const Range& parent,
                                          const std::vector<base::IpNetwork>& avoid) {
    std::set<uint128> skip;
    for (const auto& e : pool.entries) {
        if (!e.node.empty()) skip.insert(*slice_index(pool.range, pool.slice_prefix, e.slice));
    }
    for (const auto& s : avoid) {
        if (auto i = slice_index(pool.range, pool.slice_prefix, s)) skip.insert(*i);
    }
    const uint128 total = slice_count(pool.range, pool.slice_prefix);
    const int h = host_bits(pool.range, pool.slice_prefix);
    auto held = skip.begin();
    for (uint128 i = 0; i < total;) {
        while (held != skip.end() && *held < i) ++held;
        if (held != skip.end() && *held == i) {
            ++i;
            continue;
        }
        const base::IpNetwork s = slice_at(pool.range, pool.slice_prefix, i);
        if (slice_has_usable(parent, s)) return s;
        // Nothing usable here: go straight to the slice of the next address the range may hand out
        // (big exclusions are skipped in one step, not slice by slice).
        const auto next = next_allocatable(parent, offset_in_parent(parent.cidr, s) + 1);
        if (!next) return std::nullopt;
        i = std::max(i + 1, *next >> h);
    }
    return std::nullopt;
}

json claim_patch(const NodeSlicePool& pool, std::string_view node, const base::IpNetwork& slice) {
    json ops = json::array({rv_test(pool)});
    for (std::size_t i = 0; i < pool.entries.size(); ++i) {
        if (pool.entries[i].slice == slice && pool.entries[i].node.empty()) {
            ops.push_back({{"op", "replace"},
                           {"path", "/status/allocations/" + std::to_string(i) + "/nodeName"},
                           {"value", node}});
            return ops;
        }
    }
    std::vector<SliceEntry> entries = pool.entries;
    entries.push_back({std::string(node), slice.masked()});
    std::stable_sort(entries.begin(), entries.end(), [](const SliceEntry& a, const SliceEntry& b) {
        return a.slice.address.to_u128() < b.slice.address.to_u128();
    });
    json list = json::array();
    for (const auto& e : entries) list.push_back(entry_json(e));
    if (pool.has_status) {
        ops.push_back({{"op", "add"}, {"path", "/status/allocations"}, {"value", list}});
    } else {
        ops.push_back({{"op", "add"}, {"path", "/status"}, {"value", {{"allocations", list}}}});
    }
    return ops;
}

json release_patch(const NodeSlicePool& pool, std::string_view node, const base::IpNetwork& slice) {
    json ops = json::array({rv_test(pool)});
    // A pool that lists free slices (whereabouts' controller writes it so) keeps the entry, freed.
    const bool lists_free =
        std::any_of(pool.entries.begin(), pool.entries.end(), [](const auto& e) { return e.node.empty(); });
    for (std::size_t i = 0; i < pool.entries.size(); ++i) {
        if (pool.entries[i].slice != slice || pool.entries[i].node != node) continue;
        const std::string path = "/status/allocations/" + std::to_string(i);
        if (lists_free) {
            ops.push_back({{"op", "replace"}, {"path", path + "/nodeName"}, {"value", ""}});
        } else {
            ops.push_back({{"op", "remove"}, {"path", path}});
        }
        return ops;
    }
    return ops;  // not held by `node`: nothing but the test
}

IpamError range_exhausted(std::string_view pool_name, const Range& parent, int slice_prefix, std::string_view node) {
    return IpamError(
        codes::range_full,
        "network " + std::string(pool_name) + ": range " + parent.cidr.str() + " is exhausted for node " +
            std::string(node) + ": every /" + std::to_string(slice_prefix) +
            " slice (node_slice_size) is held by a node and this node's slices are full; release the "
            "slices of removed nodes (rdmanetctl reconcile), use a smaller node_slice_size or a larger range");
}

}  // namespace rdmanet::ipam::kube
