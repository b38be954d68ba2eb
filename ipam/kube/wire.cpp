// whereabouts wire format: see wire.hpp.
#include "rdmanet/ipam/kube/wire.hpp"

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

PoolObject parse_pool(const json& object, std::string network_name) {
    const std::string name = object.is_object() && object.contains("metadata") && object["metadata"].is_object()
                                 ? object["metadata"].value("name", "")
                                 : "";
    PoolObject p;
    p.object = object;
    try {
        if (!object.is_object()) throw IpamError(codes::io_failure, "not an object");
        const auto& md = object.at("metadata");
        p.resource_version = md.value("resourceVersion", "");
        const json& spec = object.at("spec");
        auto allocs = spec.find("allocations");
        p.has_allocations_map = allocs != spec.end() && allocs->is_object();
        p.dump = PoolDump::from_spec_json(spec, std::move(network_name));
    } catch (const IpamError& e) {
        throw IpamError(codes::io_failure, "IPPool " + name + " is malformed: " + e.msg);
    } catch (const json::exception& e) {
        throw IpamError(codes::io_failure, "IPPool " + name + " is malformed: " + e.what());
    }
    if (p.resource_version.empty()) throw IpamError(codes::io_failure, "IPPool " + name + " has no resourceVersion");
    return p;
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
