// whereabouts wire format: see wire.hpp.
#include "rdmanet/ipam/kube/wire.hpp"

#include <deque>

#include "rdmanet/ipam/kube/json_scan.hpp"

#include "rdmanet/ipam/error.hpp"
#include "rdmanet/ipam/naming.hpp"

namespace rdmanet::ipam::kube {

using nlohmann::json;

std::string collection_path(std::string_view ns, std::string_view plural) {
    return "/apis/" + std::string(kApiVersion) + "/namespaces/" + std::string(ns) + "/" + std::string(plural);
}

std::string object_path(std::string_view ns, std::string_view plural, std::string_view name) {
    return collection_path(ns, plural) + "/" + std::string(name);
}

std::optional<std::pair<uint128, Owner>> PoolObject::held_by(std::string_view podref, std::string_view ifname) const {
    for (const auto& [offset, owner] : dump.allocations) {
        if (owner.podref == podref && owner.ifname == ifname) return std::pair{offset, owner};
    }
    return std::nullopt;
}

std::vector<std::pair<uint128, Owner>> PoolObject::held_by_attachment(const AttachmentId& a) const {
    std::vector<std::pair<uint128, Owner>> out;
    for (const auto& [offset, owner] : dump.allocations) {
        if (owner.container_id == a.container_id && owner.ifname == a.ifname) out.emplace_back(offset, owner);
    }
    return out;
}

namespace {

// Handler of json_scan.hpp for an IPPool object: takes metadata.name/resourceVersion, spec.range
// and the allocation entries' id/podref/ifname straight from the text, without building a JSON
// tree of the whole pool (10k entries: the tree and its copies cost more than the request
// itself). Everything else is skipped. Checks what PoolDump::from_spec_json checks, with its
// messages.
class PoolReader {
public:
    using string_t = std::string_view;

    // Frames of the object/array nesting, named for the parts of an IPPool that are read.
    enum class Ctx { top, metadata, spec, allocations, entry, other };

    bool null() { return value(Kind::null, nullptr); }
    bool other_scalar() { return value(Kind::other, nullptr); }
    bool string(string_t s) { return value(Kind::string, &s); }

    bool start_object() {
        Ctx ctx = Ctx::other;
        if (stack_.empty()) {
            ctx = Ctx::top;
            is_object_ = true;
        } else {
            const Frame& f = stack_.back();
            if (f.ctx == Ctx::top && f.key == "metadata") ctx = Ctx::metadata, has_metadata_ = true;
            else if (f.ctx == Ctx::top && f.key == "spec") ctx = Ctx::spec, has_spec_ = true;
            else if (f.ctx == Ctx::spec && f.key == "allocations") ctx = Ctx::allocations, has_allocations_map_ = true;
            else if (f.ctx == Ctx::allocations) ctx = Ctx::entry, open_entry(f.key);
            else if (stack_.back().ctx == Ctx::spec && f.key == "range") range_not_string_ = true;
        }
        stack_.push_back({ctx, {}});
        return true;
    }
    bool key(string_t k) {
        stack_.back().key = k;
        return true;
    }
    bool end_object() {
        if (stack_.back().ctx == Ctx::entry) entry_ = nullptr;
        stack_.pop_back();
        return true;
    }
    bool start_array() {
        if (stack_.empty()) return false;   // not an object
        value(Kind::other, nullptr);        // an array where an entry or spec field belongs
        stack_.push_back({Ctx::other, {}});
        return true;
    }
    bool end_array() {
        stack_.pop_back();
        return true;
    }
    PoolObject finish(std::string network_name) &&;

private:
    enum class Kind { null, string, other };
    struct Frame {
        Ctx ctx;
        std::string key;
    };
    struct Entry {
        std::string key;
        Owner owner;
        bool is_object = true;
    };

    void open_entry(const std::string& key) {
        entries_.push_back({key, {}, true});
        entry_ = &entries_.back().owner;
    }

    bool value(Kind kind, const string_t* s) {
        if (stack_.empty()) return false;   // a scalar body: not an object
        const Frame& f = stack_.back();
        switch (f.ctx) {
        case Ctx::metadata:
            if (kind == Kind::string && f.key == "name") name_ = *s;
            if (kind == Kind::string && f.key == "resourceVersion") resource_version_ = *s;
            break;
        case Ctx::spec:
            if (f.key == "range") {
                if (kind == Kind::string) range_ = *s, has_range_ = true, range_not_string_ = false;
                else range_not_string_ = true;
            } else if (f.key == "allocations") {
                // null: no map (a patch adds one first); anything else but an object is malformed.
                has_allocations_map_ = false;
                allocations_not_object_ = kind != Kind::null;
            }
            break;
        case Ctx::allocations:
            entries_.push_back({f.key, {}, false});
            break;
        case Ctx::entry:
            if (kind == Kind::string && entry_) {
                if (f.key == "id") entry_->container_id = *s;
                else if (f.key == "podref") entry_->podref = *s;
                else if (f.key == "ifname") entry_->ifname = *s;
            }
            break;
        case Ctx::top:
            if (f.key == "metadata") metadata_not_object_ = true;
            if (f.key == "spec") spec_not_object_ = true;
            break;
        case Ctx::other:
            break;
        }
        return true;
    }

    std::vector<Frame> stack_;
    std::deque<Entry> entries_;   // deque: entry_ stays valid while entries are appended
    Owner* entry_ = nullptr;
    std::string name_, resource_version_, range_;
    bool is_object_ = false, has_metadata_ = false, has_spec_ = false, has_range_ = false;
    bool range_not_string_ = false, has_allocations_map_ = false, allocations_not_object_ = false;
    bool metadata_not_object_ = false, spec_not_object_ = false;
};

PoolObject PoolReader::finish(std::string network_name) && {
    auto malformed = [&](const std::string& why) -> IpamError {
        return IpamError(codes::io_failure, "IPPool " + name_ + " is malformed: " + why);
    };
    if (!is_object_) throw malformed("not an object");
    if (!has_metadata_) throw malformed(metadata_not_object_ ? "metadata is not an object" : "metadata is missing");
    if (!has_spec_) throw malformed(spec_not_object_ ? "IPPool spec must be an object" : "spec is missing");
    if (!has_range_ || range_not_string_) throw malformed("IPPool spec.range is missing");
    auto net = netns::IpNetwork::parse(range_);
    if (!net) throw malformed("IPPool spec.range \"" + range_ + "\" is not a CIDR");
    if (allocations_not_object_) throw malformed("IPPool spec.allocations must be an object");
    PoolObject p;
    p.resource_version = std::move(resource_version_);
    p.has_allocations_map = has_allocations_map_;
    p.dump = PoolDump{{std::move(network_name), net->masked()}, {}};
    const uint128 size_minus_one = net->last().to_u128() - p.dump.pool.range.address.to_u128();
    for (Entry& e : entries_) {
        const std::string field = "IPPool spec.allocations[\"" + e.key + "\"]";
        // Malformed or out-of-range keys are rejected loudly (whereabouts #403 produced bogus ones).
        auto offset = parse_decimal(e.key);
        if (!offset) throw malformed(field + ": key is not a decimal offset");
        if (*offset > size_minus_one) throw malformed(field + ": offset is outside " + p.dump.pool.range.str());
        if (!e.is_object) throw malformed(field + " must be an object");
        p.dump.allocations.insert_or_assign(*offset, std::move(e.owner));   // a repeated key: the last wins, as in a JSON tree
    }
    if (p.resource_version.empty()) throw IpamError(codes::io_failure, "IPPool " + name_ + " has no resourceVersion");
    return p;
}

}  // namespace

PoolObject parse_pool_body(std::string_view body, std::string network_name) {
    PoolReader reader;
    if (!scan_json(body, reader)) {
        throw IpamError(codes::io_failure, "the API server answered with an IPPool body that is not a JSON object");
    }
    return std::move(reader).finish(std::move(network_name));
}

PoolObject parse_pool(const json& object, std::string network_name) {
    return parse_pool_body(object.dump(), std::move(network_name));
}

std::optional<std::string> network_name_of(std::string_view object_name, const netns::IpNetwork& range) {
    const std::string suffix = normalize_range_name(range.masked().str());
    if (object_name == suffix) return std::string();
    if (object_name.size() > suffix.size() + 1 && object_name.ends_with(suffix) &&
        object_name[object_name.size() - suffix.size() - 1] == '-') {
        return std::string(object_name.substr(0, object_name.size() - suffix.size() - 1));
    }
    return std::nullopt;
}

json new_pool(std::string_view ns, const PoolKey& key) {
    return {{"apiVersion", kApiVersion},
            {"kind", "IPPool"},
            {"metadata", {{"name", key.name()}, {"namespace", ns}}},
            {"spec", {{"range", key.range.str()}, {"allocations", json::object()}}}};
}

json owner_json(const Owner& owner) {
    return {{"id", owner.container_id}, {"podref", owner.podref}, {"ifname", owner.ifname}};
}

json pool_patch(const PoolObject& pool, const std::vector<PoolChange>& changes, bool whole_pool) {
    json ops = json::array();
    if (whole_pool || !pool.has_allocations_map) {
        ops.push_back({{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", pool.resource_version}});
    }
    if (!pool.has_allocations_map) ops.push_back({{"op", "add"}, {"path", "/spec/allocations"}, {"value", json::object()}});
    for (const auto& c : changes) {
        const std::string path = "/spec/allocations/" + to_decimal(c.offset);
        ops.push_back({{"op", "test"}, {"path", path}, {"value", c.expect ? owner_json(*c.expect) : json(nullptr)}});
    }
    for (const auto& c : changes) {
        const std::string path = "/spec/allocations/" + to_decimal(c.offset);
        if (c.set) {
            ops.push_back({{"op", "add"}, {"path", path}, {"value", owner_json(*c.set)}});
        } else {
            ops.push_back({{"op", "remove"}, {"path", path}});
        }
    }
    return ops;
}

json new_reservation(std::string_view ns, std::string_view network_name, const netns::IpAddress& ip, const Owner& owner) {
    return {{"apiVersion", kApiVersion},
            {"kind", "OverlappingRangeIPReservation"},
            {"metadata", {{"name", reservation_object_name(network_name, ip)}, {"namespace", ns}}},
            {"spec", {{"containerid", owner.container_id}, {"podref", owner.podref}, {"ifname", owner.ifname}}}};
}

bool reservation_held_by(const json& reservation, const Owner& owner) {
    if (!reservation.is_object() || !reservation.contains("spec") || !reservation["spec"].is_object()) return false;
    const json& spec = reservation["spec"];
    return spec.value("podref", "") == owner.podref && spec.value("ifname", "") == owner.ifname;
}

json delete_preconditions(const json& object) {
    json pre = json::object();
    if (object.contains("metadata") && object["metadata"].is_object()) {
        const auto& md = object["metadata"];
        if (md.contains("uid") && md["uid"].is_string()) pre["uid"] = md["uid"];
        if (md.contains("resourceVersion") && md["resourceVersion"].is_string()) pre["resourceVersion"] = md["resourceVersion"];
    }
    return {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", pre}};
}

}  // namespace rdmanet::ipam::kube
