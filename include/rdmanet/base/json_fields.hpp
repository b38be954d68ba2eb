#pragma once
// Typed, named access to the members of an untrusted JSON object, for every reader of one (the CNI
// network configuration and results, the IPAM's ipam object, the node policy). Every failure names
// the member's full path in one wording ("runtimeConfig.mac must be a string, got 5") and is
// thrown by the caller's `Raise`, so that each layer reports its own error type and code.
//
// Raise: a copyable callable `raise(std::string message, std::string details)` that throws.
// Header-only: base depends on nothing but nlohmann and the standard library.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmanet::base {

// A JSON value (of any type) printed compactly for a message, cut at `limit` characters. Invalid
// UTF-8 is replaced: the message is printed as JSON in turn, and a broken byte sequence would make
// that printer throw at the worst moment.
inline std::string show_json(const nlohmann::json& value, std::size_t limit = 80) {
    std::string shown = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (shown.size() > limit) shown = shown.substr(0, limit) + "...";
    return shown;
}

// What a member whose value is JSON null means.
enum class JsonNull {
    absent,  // unset, as Go's decoder reads it (network configs, results, whereabouts' ipam object)
    value,   // a value of the wrong type for every accessor (the node policy: a typo fails closed)
};

template <class Raise>
class JsonFields {
public:
    // `object` must outlive this reader. `path` prefixes member names ("" at the top level).
    JsonFields(const nlohmann::json& object, std::string path, Raise raise, JsonNull null = JsonNull::absent)
        : object_(&object), path_(std::move(path)), raise_(std::move(raise)), null_(null) {}

    // Wraps `value` after checking it is an object; `path` names it.
    static JsonFields of_object(const nlohmann::json& value, std::string path, Raise raise,
                                JsonNull null = JsonNull::absent) {
        if (!value.is_object()) raise_and_stop(raise, path + " must be a JSON object, got " + show_json(value));
        return JsonFields(value, std::move(path), std::move(raise), null);
    }

    // Present (and, unless null is a value, not null); nullptr otherwise.
    const nlohmann::json* get(std::string_view key) const {
        auto it = object_->find(key);
        if (it == object_->end() || (it->is_null() && null_ == JsonNull::absent)) return nullptr;
        return &*it;
    }
    bool has(std::string_view key) const { return get(key) != nullptr; }

    std::optional<std::string> string(std::string_view key) const {
        const auto* value = get(key);
        if (!value) return std::nullopt;
        if (!value->is_string()) fail(key, "a string", *value);
        return value->template get<std::string>();
    }

    // A JSON integer in [0, max]: "must be a non-negative integer" for other values, "is too
    // large" above max.
    std::optional<unsigned> uint(std::string_view key, unsigned max = 0xffffffffu) const {
        const auto* value = get(key);
        if (!value) return std::nullopt;
        // nlohmann stores parsed non-negative integers as unsigned, built ones may be signed.
        const bool integer =
            value->is_number_unsigned() || (value->is_number_integer() && value->template get<std::int64_t>() >= 0);
        if (!integer) fail(key, "a non-negative integer", *value);
        const auto number = value->template get<std::uint64_t>();
        if (number > max) invalid(key, std::to_string(number) + " is too large: at most " + std::to_string(max));
        return static_cast<unsigned>(number);
    }

    std::optional<bool> boolean(std::string_view key) const {
        const auto* value = get(key);
        if (!value) return std::nullopt;
        if (!value->is_boolean()) fail(key, "true or false", *value);
        return value->template get<bool>();
    }

    // A JSON array of strings; empty when absent. A wrong element is named: "key[1] must be a
    // string, got 5".
    std::vector<std::string> strings(std::string_view key) const {
        std::vector<std::string> items;
        const auto* list = array(key);
        if (!list) return items;
        for (std::size_t i = 0; i < list->size(); ++i) {
            const auto& item = (*list)[i];
            if (!item.is_string()) fail(std::string(key) + "[" + std::to_string(i) + "]", "a string", item);
            items.push_back(item.template get<std::string>());
        }
        return items;
    }

    const nlohmann::json* object(std::string_view key) const {  // checked, nullptr when absent
        const auto* value = get(key);
        if (value && !value->is_object()) fail(key, "a JSON object", *value);
        return value;
    }
    const nlohmann::json* array(std::string_view key) const {  // checked, nullptr when absent
        const auto* value = get(key);
        if (value && !value->is_array()) fail(key, "a JSON list", *value);
        return value;
    }

    // A reader of the object member `key` (checked), named path.key; nullopt when absent.
    std::optional<JsonFields> child(std::string_view key) const {
        const auto* value = object(key);
        if (!value) return std::nullopt;
        return JsonFields(*value, name(key), raise_, null_);
    }

    // Element i of `list` (the member `key`, from array(key)) as a reader named key[i], checked to
    // be an object: "key[i] must be <requirement>, got <value>" otherwise, where the requirement
    // may show the shape expected ("an object {\"dst\": CIDR}").
    JsonFields object_at(std::string_view key, const nlohmann::json& list, std::size_t i,
                         std::string_view requirement = "a JSON object") const {
        const std::string element = std::string(key) + "[" + std::to_string(i) + "]";
        if (!list[i].is_object()) fail(element, requirement, list[i]);
        return JsonFields(list[i], name(element), raise_, null_);
    }

    // Calls `each(reader)` for every element of the list `key` (absent: none), as object_at.
    template <class Each>
    void for_each_object(std::string_view key, Each&& each, std::string_view requirement = "a JSON object") const {
        const auto* list = array(key);
        if (!list) return;
        for (std::size_t i = 0; i < list->size(); ++i) each(object_at(key, *list, i, requirement));
    }

    std::string name(std::string_view key) const {  // full path of a member
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }
    const std::string& path() const { return path_; }
    const Raise& raise() const { return raise_; }
    JsonNull null_means() const { return null_; }

    // "<path.key> must be <requirement>, got <value>".
    [[noreturn]] void fail(std::string_view key, std::string_view requirement, const nlohmann::json& value) const {
        raise_and_stop(raise_, name(key) + " must be " + std::string(requirement) + ", got " + show_json(value));
    }
    // "<path.key> <problem>" for a value of the right type but an unusable content.
    [[noreturn]] void invalid(std::string_view key, const std::string& problem, std::string details = "") const {
        raise_and_stop(raise_, name(key) + " " + problem, std::move(details));
    }

private:
    [[noreturn]] static void raise_and_stop(const Raise& raise, std::string message, std::string details = "") {
        raise(std::move(message), std::move(details));
        std::abort();  // a Raise that returns is a programming error: never go on with a bad value
    }

    const nlohmann::json* object_;  // a pointer so readers can be reassigned
    std::string path_;
    Raise raise_;
    JsonNull null_;
};

}  // namespace rdmanet::base
