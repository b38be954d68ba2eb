// whereabouts wire format: see wire.hpp.
#include "rdmanet/ipam/kube/wire.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <cstdint>
#include <deque>

#ifndef RDMANET_NLOHMANN_POOL_PARSER
#include "rdmanet/ipam/kube/json_scan.hpp"
#endif

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/core/naming.hpp"

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

// The offset an allocation key names: decimal, no leading zero (parse_decimal), with a fast path
// for keys that fit 64 bits (parse_decimal checks 128-bit overflow per digit; this runs per entry).
std::optional<uint128> offset_key(std::string_view key) {
    if (key.empty() || key.size() > 19 || (key.size() > 1 && key[0] == '0')) return parse_decimal(key);
    std::uint64_t v = 0;
    for (char c : key) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return uint128(v);
}

// `text` is the literal (a comparison of constant size, which compiles inline: this runs for
// every member of every entry).
template <std::size_t N>
bool is(std::string_view text, const char (&literal)[N]) {
    return text.size() == N - 1 && std::memcmp(text.data(), literal, N - 1) == 0;
}

// Handler of json_scan.hpp for an IPPool object: takes metadata.name/resourceVersion, spec.range
// and the allocation entries' id/podref/ifname straight from the text, without building a JSON
// tree of the whole pool (10k entries: the tree and its copies cost more than the request
// itself). Everything else is skipped. Per entry it keeps the offset and, only for the entries
// the selector picks, the owner; nothing per entry is allocated otherwise (the fields of the
// entry being read go to reused buffers). Checks what PoolDump::from_spec_json checks, with its
// messages.
class PoolReader {
public:
    using string_t = std::string_view;

    PoolReader(std::string_view input, const EntrySelector* select) : input_(input), select_(select) {
        // An entry takes 25 bytes of text at least: no reallocation while reading.
        offsets_.reserve(input.size() / 24 + 1);
        key_digits_.reserve(input.size() / 24 + 1);
    }

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
            if (f.ctx == Ctx::top && is(f.key, "metadata"))
                ctx = Ctx::metadata, has_metadata_ = true;
            else if (f.ctx == Ctx::top && is(f.key, "spec"))
                ctx = Ctx::spec, has_spec_ = true;
            else if (f.ctx == Ctx::spec && is(f.key, "allocations"))
                ctx = Ctx::allocations, has_allocations_map_ = true;
            else if (f.ctx == Ctx::allocations)
                ctx = Ctx::entry, open_entry(f.key, true);
            else if (f.ctx == Ctx::spec && is(f.key, "range"))
                range_not_string_ = true;
        }
        stack_.push_back({ctx, {}});
        return true;
    }
    // The scanner keeps a key's text alive until its member's value has been read (json_scan.hpp),
    // which is as long as a frame looks at it.
    bool key(string_t k) {
        stack_.back().key = k;
        return true;
    }
    bool end_object() {
        if (stack_.back().ctx == Ctx::entry) close_entry();
        stack_.pop_back();
        return true;
    }
    bool start_array() {
        if (stack_.empty()) return false;  // not an object
        value(Kind::other, nullptr);       // an array where an entry or spec field belongs
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
        string_t key;
    };
    struct Selected {
        std::size_t index;  // of the entry, in text order
        uint128 offset;
        Owner owner;
    };
    // A field of the entry being read: a view of the input when the string had no escapes (such a
    // view stays valid), else of a copy.
    struct Field {
        std::string_view view;
        std::string copy;
        void set(string_t s, string_t input) {
            const std::less<const char*> before;
            if (!before(s.data(), input.data()) && !before(input.data() + input.size(), s.data() + s.size())) {
                view = s;
            } else {
                copy.assign(s);
                view = copy;
            }
        }
    };

    // An entry (`is_object` false: a member of spec.allocations that is not an object).
    void open_entry(string_t key, bool is_object) {
        const auto offset = offset_key(key);
        if (!offset && !bad_key_) bad_key_ = std::string(key), bad_key_index_ = offsets_.size();
        if (!is_object && !not_object_) not_object_ = std::string(key), not_object_index_ = offsets_.size();
        offsets_.push_back(offset.value_or(0));
        key_digits_.push_back(offset ? static_cast<std::uint8_t>(key.size()) : 0);
        id_.view = podref_.view = ifname_.view = {};
    }
    void close_entry() {
        const bool selected = !select_ || (ifname_.view == select_->ifname &&
                                           (podref_.view == select_->podref || id_.view == select_->container_id));
        if (selected) {
            selected_.push_back({offsets_.size() - 1, offsets_.back(),
                                 Owner{std::string(id_.view), std::string(podref_.view), std::string(ifname_.view)}});
        }
    }

    bool value(Kind kind, const string_t* s) {
        if (stack_.empty()) return false;  // a scalar body: not an object
        const Frame& f = stack_.back();
        switch (f.ctx) {
        case Ctx::metadata:
            if (kind == Kind::string && is(f.key, "name")) name_ = *s;
            if (kind == Kind::string && is(f.key, "resourceVersion")) resource_version_ = *s;
            break;
        case Ctx::spec:
            if (is(f.key, "range")) {
                if (kind == Kind::string)
                    range_ = *s, has_range_ = true, range_not_string_ = false;
                else
                    range_not_string_ = true;
            } else if (is(f.key, "allocations")) {
                // null: no map (a patch adds one first); anything else but an object is malformed.
                has_allocations_map_ = false;
                allocations_not_object_ = kind != Kind::null;
            }
            break;
        case Ctx::allocations: open_entry(f.key, false); break;
        case Ctx::entry:
            if (kind == Kind::string) {
                if (is(f.key, "id"))
                    id_.set(*s, input_);
                else if (is(f.key, "podref"))
                    podref_.set(*s, input_);
                else if (is(f.key, "ifname"))
                    ifname_.set(*s, input_);
            }
            break;
        case Ctx::top:
            if (is(f.key, "metadata")) metadata_not_object_ = true;
            if (is(f.key, "spec")) spec_not_object_ = true;
            break;
        case Ctx::other: break;
        }
        return true;
    }

    std::string_view input_;
    const EntrySelector* select_;
    std::vector<Frame> stack_;
    std::vector<uint128> offsets_;          // of every entry, in text order (0 for a malformed key)
    std::vector<std::uint8_t> key_digits_;  // the length of each entry's key (0 for a malformed key)
    std::vector<Selected> selected_;
    Field id_, podref_, ifname_;                       // of the entry being read
    std::optional<std::string> bad_key_, not_object_;  // the first entry with that problem
    std::size_t bad_key_index_ = 0, not_object_index_ = 0;
    std::string name_, resource_version_, range_;
    bool is_object_ = false, has_metadata_ = false, has_spec_ = false, has_range_ = false;
    bool range_not_string_ = false, has_allocations_map_ = false, allocations_not_object_ = false;
    bool metadata_not_object_ = false, spec_not_object_ = false;
};

PoolObject PoolReader::finish(std::string network_name) && {
    auto malformed = [&](const std::string& why) -> IpamError {
        return IpamError(codes::io_failure, "IPPool " + name_ + " is malformed: " + why);
    };
    auto field = [](const std::string& key) { return "IPPool spec.allocations[\"" + key + "\"]"; };
    if (!is_object_) throw malformed("not an object");
    if (!has_metadata_) throw malformed(metadata_not_object_ ? "metadata is not an object" : "metadata is missing");
    if (!has_spec_) throw malformed(spec_not_object_ ? "IPPool spec must be an object" : "spec is missing");
    if (!has_range_ || range_not_string_) throw malformed("IPPool spec.range is missing");
    auto net = base::IpNetwork::parse(range_);
    if (!net) throw malformed("IPPool spec.range \"" + range_ + "\" is not a CIDR");
    if (allocations_not_object_) throw malformed("IPPool spec.allocations must be an object");
    PoolObject p;
    p.resource_version = std::move(resource_version_);
    p.has_allocations_map = has_allocations_map_;
    p.complete = select_ == nullptr;
    p.dump = PoolDump{{std::move(network_name), net->masked()}, {}};
    const uint128 size_minus_one = net->last().to_u128() - p.dump.pool.range.address.to_u128();
    // Malformed or out-of-range keys are rejected loudly (whereabouts #403 produced bogus ones);
    // the first entry (in text order) with a problem is named.
    std::size_t outside = offsets_.size();
    for (std::size_t i = 0; i < offsets_.size(); ++i) {
        if (offsets_[i] > size_minus_one) {
            outside = i;
            break;
        }
    }
    const std::size_t first_bad = std::min(
        {bad_key_ ? bad_key_index_ : offsets_.size(), not_object_ ? not_object_index_ : offsets_.size(), outside});
    if (first_bad < offsets_.size()) {
        if (bad_key_ && bad_key_index_ == first_bad)
            throw malformed(field(*bad_key_) + ": key is not a decimal offset");
        if (outside == first_bad) {
            throw malformed(field(to_decimal(offsets_[outside])) + ": offset is outside " + p.dump.pool.range.str());
        }
        throw malformed(field(*not_object_) + " must be an object");
    }
    // Every offset, as runs: sorted first, so that each run is put once. Keys have no leading
    // zeros, so fewer digits is a smaller offset, and keys sorted as strings ("10" < "9", as Go
    // writes a map) are in numeric order within one length: grouping them by length (a counting
    // sort) sorts them; a server that orders keys otherwise costs a sort per length.
    std::array<std::size_t, 41> start{};
    for (const std::uint8_t d : key_digits_) ++start[d + 1u];
    for (std::size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
    std::vector<uint128> sorted(offsets_.size() - start[1]);  // without the malformed keys (length 0)
    std::array<std::size_t, 41> next = start;
    for (std::size_t i = 0; i < offsets_.size(); ++i) {
        if (key_digits_[i] != 0) sorted[next[key_digits_[i]]++ - start[1]] = offsets_[i];
    }
    for (std::size_t d = 1; d + 1 < start.size(); ++d) {
        const auto first = sorted.begin() + static_cast<std::ptrdiff_t>(start[d] - start[1]);
        const auto last = sorted.begin() + static_cast<std::ptrdiff_t>(start[d + 1] - start[1]);
        if (!std::is_sorted(first, last)) std::sort(first, last);
    }
    std::vector<uint128> repeated;  // keys that occur more than once (not from a Go apiserver)
    for (std::size_t i = 0; i < sorted.size();) {
        std::size_t j = i;
        while (j + 1 < sorted.size() && sorted[j + 1] <= sorted[j] + 1) {
            if (sorted[j + 1] == sorted[j] && (repeated.empty() || repeated.back() != sorted[j]))
                repeated.push_back(sorted[j]);
            ++j;
        }
        p.taken.put({sorted[i], sorted[j]});
        i = j + 1;
    }
    for (Selected& e : selected_)
        p.dump.allocations.insert_or_assign(e.offset,
                                            std::move(e.owner));  // a repeated key: the last wins, as in a JSON tree
    // A repeated key whose last occurrence was not selected: an earlier selected one must not stay.
    for (const uint128 offset : repeated) {
        std::size_t last = 0;
        for (std::size_t i = 0; i < offsets_.size(); ++i) {
            if (offsets_[i] == offset) last = i;
        }
        const bool last_selected =
            std::any_of(selected_.begin(), selected_.end(), [&](const Selected& e) { return e.index == last; });
        if (!last_selected) p.dump.allocations.erase(offset);
    }
    if (p.resource_version.empty()) throw IpamError(codes::io_failure, "IPPool " + name_ + " has no resourceVersion");
    return p;
}

#ifdef RDMANET_NLOHMANN_POOL_PARSER
// The same PoolReader driven by nlohmann's SAX parser instead of json_scan.hpp (the build option
// RDMANET_NLOHMANN_POOL_PARSER, for tests/bench/home_grown_bench.sh). nlohmann hands out keys
// and strings as its lexer's token buffer, overwritten by the next token, while PoolReader keeps
// a member's key until the member's value has been reported: keys are copied, one per level.
class NlohmannPoolEvents final : public nlohmann::json_sax<json> {
public:
    explicit NlohmannPoolEvents(PoolReader& reader) : r_(reader) {}
    bool null() override { return r_.null(); }
    bool boolean(bool) override { return r_.other_scalar(); }
    bool number_integer(number_integer_t) override { return r_.other_scalar(); }
    bool number_unsigned(number_unsigned_t) override { return r_.other_scalar(); }
    bool number_float(number_float_t, const string_t&) override { return r_.other_scalar(); }
    bool string(string_t& s) override { return r_.string(s); }
    bool binary(binary_t&) override { return false; }  // not produced by the JSON parser
    bool start_object(std::size_t) override {
        keys_.emplace_back();
        return r_.start_object();
    }
    bool key(string_t& k) override {
        keys_.back() = k;
        return r_.key(keys_.back());
    }
    bool end_object() override {
        keys_.pop_back();
        return r_.end_object();
    }
    bool start_array(std::size_t) override { return r_.start_array(); }
    bool end_array() override { return r_.end_array(); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

private:
    PoolReader& r_;
    std::deque<std::string> keys_;  // deque: growing it leaves the other levels' keys in place
};

bool scan_json(std::string_view body, PoolReader& reader) {
    NlohmannPoolEvents events(reader);
    return json::sax_parse(body, &events);
}
#endif

}  // namespace

PoolObject parse_pool_body(std::string_view body, std::string network_name, const EntrySelector* select) {
    PoolReader reader(body, select);
    if (!scan_json(body, reader)) {
        throw IpamError(codes::io_failure, "the API server answered with an IPPool body that is not a JSON object");
    }
    return std::move(reader).finish(std::move(network_name));
}

PoolObject parse_pool(const json& object, std::string network_name) {
    return parse_pool_body(object.dump(), std::move(network_name));
}

std::optional<std::string> network_name_of(std::string_view object_name, const base::IpNetwork& range) {
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
    if (!pool.has_allocations_map)
        ops.push_back({{"op", "add"}, {"path", "/spec/allocations"}, {"value", json::object()}});
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

json new_reservation(std::string_view ns, std::string_view network_name, const base::IpAddress& ip,
                     const Owner& owner) {
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
        if (md.contains("resourceVersion") && md["resourceVersion"].is_string())
            pre["resourceVersion"] = md["resourceVersion"];
    }
    return {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", pre}};
}

}  // namespace rdmanet::ipam::kube
