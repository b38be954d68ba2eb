// Test API server object store: see resource_store.hpp.
#include "resource_store.hpp"

#include <algorithm>
#include <ctime>
#include <optional>

#include "json_writer.hpp"

namespace apiserver {

namespace {

std::string now_rfc3339() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string group_kind(const ResourceType& t) { return t.group.empty() ? t.plural : t.plural + "." + t.group; }

bool valid_name(const std::string& n) {
    if (n.empty() || n.size() > 253) return false;
    for (char c : n) {
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
    }
    return std::isalnum(static_cast<unsigned char>(n.front())) && std::isalnum(static_cast<unsigned char>(n.back()));
}

// What undoes one applied patch operation (paths are re-resolved at undo time: array inserts
// may move elements, so pointers into the tree would not stay valid).
struct UndoStep {
    enum Kind { erase_member, set_member, erase_index, insert_index, set_index } kind;
    json::json_pointer parent;
    std::string key;
    std::size_t index = 0;
    json old;
};

void undo_all(json& target, std::vector<UndoStep>& log) {
    for (auto it = log.rbegin(); it != log.rend(); ++it) {
        json& parent = target.at(it->parent);
        switch (it->kind) {
        case UndoStep::erase_member: parent.erase(it->key); break;
        case UndoStep::set_member: parent[it->key] = std::move(it->old); break;
        case UndoStep::erase_index: parent.erase(it->index); break;
        case UndoStep::insert_index:
            parent.insert(parent.begin() + static_cast<std::ptrdiff_t>(it->index), std::move(it->old));
            break;
        case UndoStep::set_index: parent[it->index] = std::move(it->old); break;
        }
    }
    log.clear();
}

std::optional<std::size_t> array_index(const std::string& token, std::size_t size, bool allow_end) {
    if (allow_end && token == "-") return size;
    if (token.empty() || token.size() > 9 || (token.size() > 1 && token[0] == '0')) return std::nullopt;
    std::size_t i = 0;
    for (char c : token) {
        if (c < '0' || c > '9') return std::nullopt;
        i = i * 10 + static_cast<std::size_t>(c - '0');
    }
    if (i > size || (!allow_end && i == size)) return std::nullopt;
    return i;
}

// Whether the in-place applier handles `ops` (test/add/remove/replace below the root); move and
// copy go through nlohmann's copying patch instead.
bool patchable_in_place(const json& ops) {
    for (const auto& op : ops) {
        if (!op.is_object() || !op.contains("path") || !op["path"].is_string() || op["path"] == "") return false;
        const std::string o = op.value("op", "");
        if (o != "test" && o != "add" && o != "remove" && o != "replace") return false;
        if (o != "remove" && !op.contains("value")) return false;
    }
    return true;
}

// Applies `ops` (patchable_in_place) to `target`; on the first failing operation undoes the
// applied ones and returns why. On success `log` undoes the whole patch.
std::optional<std::string> apply_in_place(json& target, const json& ops, std::vector<UndoStep>& log) {
    for (const auto& op : ops) {
        const std::string kind = op["op"].get<std::string>();
        const std::string path = op["path"].get<std::string>();
        std::optional<std::string> error;
        try {
            const json::json_pointer ptr(path);
            if (kind == "test") {
                const json& want = op["value"];
                // The kube-apiserver's JSON patch (evanphx/json-patch) treats a missing member as
                // null in a `test`: whereabouts and rdmanet test "this entry is absent" that way.
                const bool present = target.contains(ptr);
                if (want.is_null() ? present && !target.at(ptr).is_null() : !present || target.at(ptr) != want) {
                    error = "testing value " + path + " failed: test failed";
                }
            } else {
                const json::json_pointer parent_ptr = ptr.parent_pointer();
                const std::string key = ptr.back();
                if (!target.contains(parent_ptr)) {
                    error = "doc is missing path: " + path;
                } else if (json& parent = target.at(parent_ptr); parent.is_object()) {
                    auto it = parent.find(key);
                    if (kind != "add" && it == parent.end()) {
                        error = "unable to " + kind + " nonexistent key: " + key;
                    } else if (kind == "remove") {
                        log.push_back({UndoStep::set_member, parent_ptr, key, 0, std::move(*it)});
                        parent.erase(it);
                    } else if (it != parent.end()) {
                        log.push_back({UndoStep::set_member, parent_ptr, key, 0, std::move(*it)});
                        *it = op["value"];
                    } else {
                        log.push_back({UndoStep::erase_member, parent_ptr, key, 0, json()});
                        parent[key] = op["value"];
                    }
                } else if (parent.is_array()) {
                    const auto i = array_index(key, parent.size(), kind == "add");
                    if (!i) {
                        error = "index out of bounds: " + path;
                    } else if (kind == "add") {
                        parent.insert(parent.begin() + static_cast<std::ptrdiff_t>(*i), op["value"]);
                        log.push_back({UndoStep::erase_index, parent_ptr, key, *i, json()});
                    } else if (kind == "remove") {
                        log.push_back({UndoStep::insert_index, parent_ptr, key, *i, std::move(parent[*i])});
                        parent.erase(*i);
                    } else {
                        log.push_back({UndoStep::set_index, parent_ptr, key, *i, std::move(parent[*i])});
                        parent[*i] = op["value"];
                    }
                } else {
                    error = "doc is missing path: " + path;
                }
            }
        } catch (const json::exception& e) {
            error = e.what();
        }
        if (error) {
            undo_all(target, log);
            return error;
        }
    }
    return std::nullopt;
}

// The IPPool allocation entries (keys of spec.allocations) a JSON patch changes, when it changes
// nothing else: every add/remove/replace is at or below /spec/allocations/<key>. nullopt otherwise.
std::optional<std::vector<std::string>> allocation_entries_changed(const ResourceType& t, const json& ops) {
    if (t.kind != "IPPool") return std::nullopt;
    std::vector<std::string> keys;
    for (const auto& op : ops) {
        if (op["op"] == "test") continue;
        std::vector<std::string> tokens;  // root first
        try {
            for (json::json_pointer p(op["path"].get<std::string>()); !p.empty(); p = p.parent_pointer()) {
                tokens.insert(tokens.begin(), p.back());
            }
        } catch (const json::exception&) {
            return std::nullopt;
        }
        if (tokens.size() < 3 || tokens[0] != "spec" || tokens[1] != "allocations") return std::nullopt;
        keys.push_back(tokens[2]);
    }
    return keys;
}

// spec.allocations when it is an object (the IPPool entries whose text is kept across versions).
const json* allocations_object(const json& o) {
    if (!o.is_object()) return nullptr;
    auto spec = o.find("spec");
    if (spec == o.end() || !spec->is_object()) return nullptr;
    auto allocs = spec->find("allocations");
    if (allocs == spec->end() || !allocs->is_object()) return nullptr;
    return &*allocs;
}

}  // namespace

json status_object(int code, const std::string& reason, const std::string& message, json details) {
    json s = {{"kind", "Status"},
              {"apiVersion", "v1"},
              {"metadata", json::object()},
              {"status", code < 400 ? "Success" : "Failure"},
              {"message", message},
              {"reason", reason},
              {"code", code}};
    if (!details.empty()) s["details"] = std::move(details);
    return s;
}

ResourceStore::ResourceStore(bool with_whereabouts_crds) {
    types_.push_back({"", "v1", "pods", "pod", "Pod", "po"});
    types_.push_back({"", "v1", "namespaces", "namespace", "Namespace", "ns", false});
    types_.push_back({"", "v1", "nodes", "node", "Node", "no", false});
    // DRA's ResourceClaims (built into the kube-apiserver, no CRD): what rdmanet's node agent lists
    // to find the DRANET provider's claims that are gone. Stored as they come (no schema check).
    types_.push_back({"resource.k8s.io", "v1", "resourceclaims", "resourceclaim", "ResourceClaim", ""});
    if (with_whereabouts_crds) {
        types_.push_back({"whereabouts.cni.cncf.io", "v1alpha1", "ippools", "ippool", "IPPool", ""});
        types_.push_back({"whereabouts.cni.cncf.io", "v1alpha1", "overlappingrangeipreservations",
                          "overlappingrangeipreservation", "OverlappingRangeIPReservation", ""});
        types_.push_back(
            {"whereabouts.cni.cncf.io", "v1alpha1", "nodeslicepools", "nodeslicepool", "NodeSlicePool", ""});
        // nv-ipam's CRDs (status subresource: see update()).
        types_.push_back({"nv-ipam.nvidia.com", "v1alpha1", "ippools", "ippool", "IPPool", ""});
        types_.push_back({"nv-ipam.nvidia.com", "v1alpha1", "cidrpools", "cidrpool", "CIDRPool", ""});
    }
    std::lock_guard lock(mu_);
    for (const char* ns : {"default", "kube-system", "kube-public"}) ensure_namespace(ns);
}

void ResourceStore::ensure_namespace(const std::string& ns) {
    if (ns.empty()) return;
    const Key k{"namespaces", "", ns};
    if (objects_.count(k)) return;
    objects_[k].object = {{"apiVersion", "v1"},
                          {"kind", "Namespace"},
                          {"metadata",
                           {{"name", ns},
                            {"uid", "ns-" + ns},
                            {"resourceVersion", std::to_string(++revision_)},
                            {"creationTimestamp", now_rfc3339()}}},
                          {"status", {{"phase", "Active"}}}};
}

const ResourceType* ResourceStore::find_type(const std::string& group, const std::string& version,
                                             const std::string& plural) const {
    for (const auto& t : types_) {
        if (t.group == group && t.version == version && t.plural == plural) return &t;
    }
    return nullptr;
}

ResourceStore::Key ResourceStore::key(const ResourceType& t, const std::string& ns, const std::string& name) const {
    return {group_kind(t), ns, name};
}

json ResourceStore::not_found(const ResourceType& t, const std::string& name) const {
    return status_object(404, "NotFound", group_kind(t) + " \"" + name + "\" not found",
                         {{"name", name}, {"group", t.group}, {"kind", t.plural}});
}

std::size_t ResourceStore::largest_object() {
    std::lock_guard lock(mu_);
    return largest_object_;
}

Reply ResourceStore::too_large() {
    // The kube-apiserver relays etcd's error as a Status without reason or details.
    return {500, json{{"kind", "Status"},
                      {"apiVersion", "v1"},
                      {"metadata", json::object()},
                      {"status", "Failure"},
                      {"message", "etcdserver: request is too large"},
                      {"code", 500}}};
}

std::size_t ResourceStore::etcd_overhead(const ResourceType& t, const std::string& ns, const std::string& name) {
    // etcd limits the whole request: the kube-apiserver's write is a transaction naming the key
    // three times (compare, put, get on failure) around the object. The framing constant makes
    // the boundary the real pair's for whereabouts' IPPools (12,556 entries of its shape).
    const std::string key =
        "/registry/" + (t.group.empty() ? "" : t.group + "/") + t.plural + "/" + (ns.empty() ? "" : ns + "/") + name;
    return 3 * key.size() + kTxnFraming;
}

bool ResourceStore::exceeds_limit(const ResourceType& t, const std::string& ns, const std::string& name,
                                  const json& object) {
    std::string text;
    write_json(object, text);
    return text.size() + etcd_overhead(t, ns, name) > kMaxObjectBytes;
}

std::uint64_t ResourceStore::revision() {
    std::lock_guard lock(mu_);
    return revision_;
}

std::optional<Reply> ResourceStore::validate(const ResourceType& t, const std::string& name, const json& o,
                                             const std::vector<std::string>* entries) const {
    std::vector<json> causes;
    auto require = [&](bool ok, const std::string& field, const std::string& msg) {
        if (!ok) causes.push_back({{"reason", "FieldValueRequired"}, {"message", msg}, {"field", field}});
    };
    auto is_string_member = [](const json& obj, const char* key) {
        if (!obj.is_object()) return false;
        auto it = obj.find(key);
        return it != obj.end() && it->is_string();
    };
    static const json none;
    const json& spec = o.is_object() && o.contains("spec") ? o["spec"] : none;
    if (t.kind == "IPPool" && t.group == "whereabouts.cni.cncf.io") {
        require(spec.is_object(), "spec", "Required value");
        if (spec.is_object()) {
            require(is_string_member(spec, "range"), "spec.range", "Required value");
            auto allocs = spec.find("allocations");
            const bool have = allocs != spec.end() && allocs->is_object();
            require(have, "spec.allocations", "Required value");
            auto check_entry = [&](const std::string& key, const json& entry) {
                // Field names built only for a failure: this runs over every entry per write. A map
                // key is a path segment in the kube-apiserver's field path (spec.allocations.60.podref).
                if (!is_string_member(entry, "id")) require(false, "spec.allocations." + key + ".id", "Required value");
                if (!is_string_member(entry, "podref"))
                    require(false, "spec.allocations." + key + ".podref", "Required value");
            };
            if (have && entries) {
                for (const std::string& key : *entries) {
                    auto it = allocs->find(key);
                    if (it != allocs->end()) check_entry(key, *it);
                }
            } else if (have) {
                for (auto it = allocs->begin(); it != allocs->end(); ++it) check_entry(it.key(), *it);
            }
        }
    } else if (t.kind == "NodeSlicePool") {
        // whereabouts v0.9's CRD: spec.range and spec.sliceSize; a status needs allocations, each
        // entry nodeName and sliceRange (strings; nodeName "" = a free slice).
        require(spec.is_object(), "spec", "Required value");
        if (spec.is_object()) {
            require(is_string_member(spec, "range"), "spec.range", "Required value");
            require(is_string_member(spec, "sliceSize"), "spec.sliceSize", "Required value");
        }
        if (auto st = o.find("status"); st != o.end()) {
            auto allocs = st->is_object() ? st->find("allocations") : st->end();
            const bool have = st->is_object() && allocs != st->end() && allocs->is_array();
            require(have, "status.allocations", "Required value");
            if (have) {
                for (std::size_t i = 0; i < allocs->size(); ++i) {
                    const std::string at = "status.allocations[" + std::to_string(i) + "]";
                    require(is_string_member((*allocs)[i], "nodeName"), at + ".nodeName", "Required value");
                    require(is_string_member((*allocs)[i], "sliceRange"), at + ".sliceRange", "Required value");
                }
            }
        }
    } else if (t.kind == "OverlappingRangeIPReservation") {
        require(spec.is_object(), "spec", "Required value");
        require(is_string_member(spec, "podref"), "spec.podref", "Required value");
    }
    if (causes.empty()) return std::nullopt;
    std::string msg = t.kind + " \"" + name + "\" is invalid: ";
    for (std::size_t i = 0; i < causes.size(); ++i)
        msg += (i ? ", " : "") + causes[i]["field"].get<std::string>() + ": Required value";
    return Reply{422, status_object(422, "Invalid", msg,
                                    {{"name", name}, {"group", t.group}, {"kind", t.kind}, {"causes", causes}})};
}

void ResourceStore::Stored::changed(const std::vector<std::string>* entries) {
    text.reset();
    const json* allocs = allocations_object(object);
    if (entries && allocs && allocations_current) {
        allocations.update(*allocs, *entries);
    } else {
        allocations_current = false;  // rebuilt when next written out
    }
}

Reply ResourceStore::stored_reply(int status, Stored& st, Output out) {
    if (out == Output::metadata) {
        return Reply(status, json{{"kind", "PartialObjectMetadata"},
                                  {"apiVersion", "meta.k8s.io/v1"},
                                  {"metadata", st.object.value("metadata", json::object())}});
    }
    if (!st.text) {
        std::string text;
        text.reserve(st.text_size + 4096);
        if (const json* allocs = allocations_object(st.object)) {
            if (!st.allocations_current) st.allocations.rebuild(*allocs);
            st.allocations_current = true;
            write_json(st.object, text, allocs, st.allocations);
        } else {
            write_json(st.object, text);
        }
        st.text_size = text.size();
        if (text.size() <= kMaxObjectBytes) largest_object_ = std::max(largest_object_, text.size());
        st.text = std::make_shared<const std::string>(std::move(text));
    }
    return Reply(status, st.text);
}

Reply ResourceStore::list(const ResourceType& t, const std::string& ns, const std::string& field_selector) {
    std::lock_guard lock(mu_);
    std::string only_name;
    if (field_selector.rfind("metadata.name=", 0) == 0) only_name = field_selector.substr(14);
    // spec.nodeName=NODE, as the kubelet and node agents list the pods of one node.
    std::optional<std::string> only_node;
    if (field_selector.rfind("spec.nodeName=", 0) == 0) only_node = field_selector.substr(14);
    json items = json::array();
    const std::string gk = group_kind(t);
    for (const auto& [k, obj] : objects_) {
        if (std::get<0>(k) != gk) continue;
        if (!ns.empty() && std::get<1>(k) != ns) continue;
        if (!only_name.empty() && std::get<2>(k) != only_name) continue;
        if (only_node) {
            const auto& spec = obj.object.contains("spec") ? obj.object["spec"] : json::object();
            if (!spec.is_object() || spec.value("nodeName", "") != *only_node) continue;
        }
        items.push_back(obj.object);
    }
    return {200,
            {{"apiVersion", t.group.empty() ? t.version : t.group + "/" + t.version},
             {"kind", t.kind + "List"},
             {"metadata", {{"resourceVersion", std::to_string(revision_)}}},
             {"items", std::move(items)}}};
}

Reply ResourceStore::get(const ResourceType& t, const std::string& ns, const std::string& name, Output out) {
    std::lock_guard lock(mu_);
    auto it = objects_.find(key(t, ns, name));
    if (it == objects_.end()) return {404, not_found(t, name)};
    return stored_reply(200, it->second, out);
}

Reply ResourceStore::create(const ResourceType& t, const std::string& ns, json o, Output out) {
    if (!o.is_object()) return {400, status_object(400, "BadRequest", "the body is not a JSON object")};
    if (!o.contains("metadata") || !o["metadata"].is_object()) o["metadata"] = json::object();
    auto& md = o["metadata"];
    std::lock_guard lock(mu_);
    std::string name = md.value("name", "");
    if (name.empty() && md.contains("generateName")) {
        name = md["generateName"].get<std::string>() + std::to_string(next_uid_);
    }
    if (!valid_name(name)) {
        return {422,
                status_object(422, "Invalid", t.kind + " \"" + name + "\" is invalid: metadata.name: Invalid value",
                              {{"name", name}, {"group", t.group}, {"kind", t.kind}})};
    }
    if (md.contains("namespace") && md["namespace"].is_string() && md["namespace"] != ns) {
        return {400,
                status_object(400, "BadRequest",
                              "the namespace of the provided object does not match the namespace sent on the request")};
    }
    if (auto bad = validate(t, name, o)) return *bad;
    const Key k = key(t, ns, name);
    if (objects_.count(k)) {
        return {409, status_object(409, "AlreadyExists", group_kind(t) + " \"" + name + "\" already exists",
                                   {{"name", name}, {"group", t.group}, {"kind", t.plural}})};
    }
    if (exceeds_limit(t, ns, name, o)) return too_large();
    ensure_namespace(ns);
    md["name"] = name;
    if (!ns.empty()) md["namespace"] = ns;
    md["uid"] = "00000000-0000-4000-8000-" + [&] {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%012llu", static_cast<unsigned long long>(next_uid_++));
        return std::string(buf);
    }();
    md["resourceVersion"] = std::to_string(++revision_);
    md["creationTimestamp"] = now_rfc3339();
    md.erase("generateName");
    o["apiVersion"] = t.group.empty() ? t.version : t.group + "/" + t.version;
    o["kind"] = t.kind;
    Stored& st = objects_[k];
    st.object = std::move(o);
    st.changed(nullptr);
    return stored_reply(201, st, out);
}

Reply ResourceStore::update(const ResourceType& t, const std::string& ns, const std::string& name, json o, Output out,
                            bool status_only) {
    if (!o.is_object()) return {400, status_object(400, "BadRequest", "the body is not a JSON object")};
    std::lock_guard lock(mu_);
    auto it = objects_.find(key(t, ns, name));
    if (it == objects_.end()) return {404, not_found(t, name)};
    if (status_only) {
        // The status subresource: only status changes; the resourceVersion precondition holds.
        json whole = it->second.object;
        whole["status"] = o.value("status", json::object());
        if (o.contains("metadata") && o["metadata"].is_object() && o["metadata"].contains("resourceVersion"))
            whole["metadata"]["resourceVersion"] = o["metadata"]["resourceVersion"];
        o = std::move(whole);
    }
    if (!o.contains("metadata") || !o["metadata"].is_object()) o["metadata"] = json::object();
    auto& md = o["metadata"];
    const std::string rv = md.value("resourceVersion", "");
    const auto& stored = it->second.object["metadata"];
    if (!rv.empty() && rv != stored.value("resourceVersion", "")) {
        return {409, status_object(409, "Conflict",
                                   "Operation cannot be fulfilled on " + group_kind(t) + " \"" + name +
                                       "\": the object has been modified; please apply your changes to the latest "
                                       "version and try again",
                                   {{"name", name}, {"group", t.group}, {"kind", t.plural}})};
    }
    if (md.value("name", name) != name)
        return {400, status_object(400, "BadRequest", "the name of the object does not match the URL")};
    if (auto bad = validate(t, name, o)) return *bad;
    if (exceeds_limit(t, ns, name, o)) return too_large();
    for (const char* keep : {"uid", "creationTimestamp", "namespace", "name"}) md[keep] = stored[keep];
    md["resourceVersion"] = std::to_string(++revision_);
    o["apiVersion"] = t.group.empty() ? t.version : t.group + "/" + t.version;
    o["kind"] = t.kind;
    it->second.object = std::move(o);
    it->second.changed(nullptr);
    return stored_reply(200, it->second, out);
}

Reply ResourceStore::patch(const ResourceType& t, const std::string& ns, const std::string& name,
                           const std::string& content_type, const json& p, Output out) {
    std::lock_guard lock(mu_);
    auto it = objects_.find(key(t, ns, name));
    if (it == objects_.end()) return {404, not_found(t, name)};
    json& stored = it->second.object;
    auto invalid = [&](const std::string& why) {
        // The kube-apiserver answers a failed `test` (and a path that does not exist) with 422.
        return Reply{
            422, status_object(422, "Invalid", "the server rejected our request due to an error in our request: " + why,
                               {{"name", name}, {"group", t.group}, {"kind", t.kind}})};
    };
    const json md_before = stored.contains("metadata") ? stored["metadata"] : json::object();
    std::vector<UndoStep> undo;
    std::optional<json> copy;                         // the patched copy, for what the in-place applier does not handle
    std::optional<std::vector<std::string>> entries;  // the only parts an in-place patch changed
    if (content_type.rfind("application/json-patch+json", 0) == 0) {
        if (!p.is_array()) return {400, status_object(400, "BadRequest", "a JSON patch must be an array")};
        if (patchable_in_place(p)) {
            if (auto error = apply_in_place(stored, p, undo)) return invalid(*error);
            entries = allocation_entries_changed(t, p);
        } else {
            // nlohmann's patch calls a `test` of a missing member against null a failure, unlike
            // the kube-apiserver: those tests are checked here and left out.
            json ops = json::array();
            for (const auto& op : p) {
                if (op.is_object() && op.value("op", "") == "test" && op.contains("value") && op["value"].is_null() &&
                    op.contains("path") && op["path"].is_string()) {
                    try {
                        const json::json_pointer ptr(op["path"].get<std::string>());
                        if (stored.contains(ptr) && !stored.at(ptr).is_null()) {
                            return invalid("testing value " + op["path"].get<std::string>() + " failed: test failed");
                        }
                    } catch (const json::exception& e) {
                        return invalid(std::string("bad patch path: ") + e.what());
                    }
                    continue;
                }
                ops.push_back(op);
            }
            try {
                copy = stored.patch(ops);
            } catch (const json::exception& e) {
                return invalid(e.what());
            }
        }
    } else if (content_type.rfind("application/merge-patch+json", 0) == 0) {
        copy = stored;
        copy->merge_patch(p);
    } else {
        return {415,
                status_object(415, "UnsupportedMediaType", "the content type " + content_type + " is not supported")};
    }
    json& patched = copy ? *copy : stored;
    if (auto bad = validate(t, name, patched, entries ? &*entries : nullptr)) {
        undo_all(stored, undo);
        return *bad;
    }
    if (!patched.contains("metadata") || !patched["metadata"].is_object()) patched["metadata"] = json::object();
    for (const char* keep : {"uid", "creationTimestamp", "namespace", "name"}) {
        if (md_before.contains(keep)) patched["metadata"][keep] = md_before[keep];
    }
    const json rv_before = md_before.value("resourceVersion", json());
    patched["metadata"]["resourceVersion"] = std::to_string(++revision_);
    if (copy) {
        if (exceeds_limit(t, ns, name, *copy)) {
            --revision_;
            return too_large();
        }
        stored = std::move(*copy);
    }
    it->second.changed(entries ? &*entries : nullptr);
    const std::size_t largest_before = largest_object_;
    Reply reply = stored_reply(200, it->second, Output::object);
    if (!copy && it->second.text_size + etcd_overhead(t, ns, name) > kMaxObjectBytes) {
        largest_object_ = largest_before;  // never stored
        // Refused like etcd refuses it: the stored object goes back to its previous version.
        undo_all(stored, undo);
        stored["metadata"]["resourceVersion"] = rv_before;
        --revision_;
        it->second.changed(nullptr);
        return too_large();
    }
    return out == Output::object ? reply : stored_reply(200, it->second, out);
}

Reply ResourceStore::remove(const ResourceType& t, const std::string& ns, const std::string& name,
                            const json& options) {
    std::lock_guard lock(mu_);
    auto it = objects_.find(key(t, ns, name));
    if (it == objects_.end()) return {404, not_found(t, name)};
    if (options.is_object() && options.contains("preconditions") && options["preconditions"].is_object()) {
        const auto& pre = options["preconditions"];
        const auto& md = it->second.object["metadata"];
        for (const char* field : {"uid", "resourceVersion"}) {
            if (pre.contains(field) && pre[field].is_string() && pre[field] != md.value(field, "")) {
                return {409, status_object(409, "Conflict",
                                           "Precondition failed: " + std::string(field) +
                                               " in precondition: " + pre[field].get<std::string>() + ", " +
                                               std::string(field) + " in object meta: " + md.value(field, ""),
                                           {{"name", name}, {"group", t.group}, {"kind", t.plural}})};
            }
        }
    }
    json gone = std::move(it->second.object);
    objects_.erase(it);
    ++revision_;
    return {200, gone};
}

}  // namespace apiserver
