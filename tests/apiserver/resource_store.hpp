#pragma once
// The object store of the test API server: namespaced resources with kube-apiserver semantics for
// what rdmanet (and kubectl get/create/delete) use. Pure: one call in, (HTTP status, JSON body)
// out; the HTTP layer (main.cpp) only routes. Thread-safe (one mutex).
//
// Cost: the benchmark (tests/bench/kube_bench.cpp) runs this server on the same CPUs as the client
// it measures, with pools of 10k entries, so per request it does what the kube-apiserver must do
// (serialize the whole object into every GET and every write response that asks for the object,
// check the schema) and avoids repeating work on the parts of an object a write did not touch:
//  - each object's serialized form is kept per resourceVersion (a GET of an unchanged object
//    copies bytes), made by a fast writer (json_writer.hpp) with the text of each IPPool
//    allocation entry kept across versions (member_text.hpp): a write of one entry re-serializes
//    that entry, and the next GET copies the other entries' text;
//  - a JSON patch is applied to the stored object in place (an undo log restores it when an
//    operation or the schema check fails) instead of to a copy of the whole object;
//  - the schema check of a JSON patch that only changes IPPool allocation entries checks those
//    entries: the stored object passed the whole check when it was written and nothing else
//    changed, so the result is the whole check's (the real apiserver re-validates the whole
//    object; with ratcheting, unchanged invalid parts would not fail it either).
// The real server also decodes the stored object from etcd per write, which this one skips.
//
// Output: a single-object answer is the object, or - when the request's Accept asks for the
// apiserver's PartialObjectMetadata transform (client-go's metadata client) - only its
// metadata, as {"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{..}}.
//
// Semantics kept from the real server:
//  - one cluster-wide resourceVersion counter (etcd's revision), bumped by every write; each
//    object carries the value of its last write; lists carry the current one;
//  - create: 201; an existing name -> 409 AlreadyExists; uid, creationTimestamp, namespace set;
//  - nv-ipam's IPPool/CIDRPool: PUT .../NAME/status updates only status (the status subresource);
//  - update (PUT): a body resourceVersion that differs from the stored one -> 409 Conflict;
//  - patch: application/json-patch+json (RFC 6902; a failed `test` -> 422 Invalid, which is what
//    the kube-apiserver answers) and application/merge-patch+json;
//  - delete: DeleteOptions preconditions (uid, resourceVersion) -> 409 Conflict when they differ;
//  - namespaces: created implicitly by the first object in them (the real server would refuse);
//  - cluster-scoped resources (namespaces, core/v1 nodes): addressed without /namespaces/NS, and
//    a namespaced path to them is 404 as on the real server; a node is created, got, listed and
//    deleted like any object (no kubelet, no status updates);
//  - resource.k8s.io/v1 ResourceClaims: namespaced objects like any other (create, get, list per
//    namespace and across all, delete), stored without a schema check or finalizers (the real
//    server adds delete protection once a claim is allocated; nothing allocates here);
//  - errors as `Status` objects (NotFound with details for an object, without for a resource
//    the server does not have);
//  - etcd's default value limit (--max-request-bytes, 1.5 MiB = 1,572,864 bytes): a create,
//    update or patch whose resulting object serializes to more is refused the way the
//    kube-apiserver relays etcd's refusal: 500 InternalError, message "etcdserver: request is too
//    large", and nothing stored (the object keeps its previous version and resourceVersion);
//  - whereabouts' CRD schema: IPPool spec.range and spec.allocations required, entries need id
//    and podref; OverlappingRangeIPReservation spec.podref required -> 422 Invalid otherwise.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "member_text.hpp"

namespace apiserver {

using nlohmann::json;

struct ResourceType {
    std::string group;  // "" = core
    std::string version;
    std::string plural;
    std::string singular;
    std::string kind;
    std::string short_name;  // "" = none
    bool namespaced = true;  // false: cluster-scoped (namespaces, nodes), addressed without /namespaces/NS
};

struct Reply {
    int status = 200;
    json body;
    std::shared_ptr<const std::string> text;  // set: the body already serialized (sent instead of `body`)

    Reply() = default;
    Reply(int s, json b) : status(s), body(std::move(b)) {}
    Reply(int s, std::shared_ptr<const std::string> t) : status(s), text(std::move(t)) {}
};

// What a single-object answer carries (see above).
enum class Output { object, metadata };

json status_object(int code, const std::string& reason, const std::string& message, json details = json::object());

class ResourceStore {
public:
    explicit ResourceStore(bool with_whereabouts_crds);

    const std::vector<ResourceType>& types() const { return types_; }
    const ResourceType* find_type(const std::string& group, const std::string& version,
                                  const std::string& plural) const;

    // ns "" in list = all namespaces. field_selector: "" or "metadata.name=X" (kubectl delete --wait).
    Reply list(const ResourceType& t, const std::string& ns, const std::string& field_selector);
    Reply get(const ResourceType& t, const std::string& ns, const std::string& name, Output out = Output::object);
    Reply create(const ResourceType& t, const std::string& ns, json object, Output out = Output::object);
    // status_only: PUT of the status subresource (.../NAME/status): everything but status is kept.
    Reply update(const ResourceType& t, const std::string& ns, const std::string& name, json object,
                 Output out = Output::object, bool status_only = false);
    Reply patch(const ResourceType& t, const std::string& ns, const std::string& name, const std::string& content_type,
                const json& patch, Output out = Output::object);
    Reply remove(const ResourceType& t, const std::string& ns, const std::string& name, const json& options);

    std::uint64_t revision();
    // Serialized size of the largest object stored so far (the benchmark reports it).
    std::size_t largest_object();

    static constexpr std::size_t kMaxObjectBytes = 1572864;  // etcd's default max request size
    static constexpr std::size_t kTxnFraming = 0;
    // What etcd counts besides the object's JSON in the kube-apiserver's write of it.
    static std::size_t etcd_overhead(const ResourceType& t, const std::string& ns, const std::string& name);

private:
    using Key = std::tuple<std::string, std::string, std::string>;  // plural.group, namespace, name
    Key key(const ResourceType& t, const std::string& ns, const std::string& name) const;
    // The schema check of the whole object, or (`entries`) of only those IPPool allocation entries.
    std::optional<Reply> validate(const ResourceType& t, const std::string& name, const json& object,
                                  const std::vector<std::string>* entries = nullptr) const;
    // A stored object and its serialized form (made on first need after each write).
    struct Stored {
        json object;
        std::shared_ptr<const std::string> text;
        MemberText allocations;            // IPPool spec.allocations entries' text
        bool allocations_current = false;  // `allocations` matches the object
        std::size_t text_size = 0;         // of the last text made (the next is about as long)

        // After a write: the texts of `entries` changed, or (nullptr) anything may have.
        void changed(const std::vector<std::string>* entries);
    };
    // The object's serialized form (or its metadata) as a reply. Caller holds mu_.
    Reply stored_reply(int status, Stored& s, Output out);

    json not_found(const ResourceType& t, const std::string& name) const;
    // The refusal of an object above kMaxObjectBytes, as the kube-apiserver relays etcd's.
    static Reply too_large();
    // Whether `object` serializes to more than kMaxObjectBytes.
    static bool exceeds_limit(const ResourceType& t, const std::string& ns, const std::string& name,
                              const json& object);
    // Namespaces exist once anything is created in them (kubectl looks a namespace up when a get
    // answers NotFound); default, kube-system and kube-public exist from the start. Caller holds mu_.
    void ensure_namespace(const std::string& ns);

    std::vector<ResourceType> types_;
    std::mutex mu_;
    std::map<Key, Stored> objects_;
    std::uint64_t revision_ = 1000;
    std::uint64_t next_uid_ = 1;
    std::size_t largest_object_ = 0;
};

}  // namespace apiserver
