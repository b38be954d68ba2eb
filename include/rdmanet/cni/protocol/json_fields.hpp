#pragma once
// Typed, named access to the members of an untrusted JSON object. Every failure is an Error with
// the caller's code and the member's full path ("runtimeConfig.mac must be a string, got 5"), so
// config and result parsing share one wording. JSON null counts as absent, as in Go's decoder.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/cni/protocol/error.hpp"

namespace rdmanet::cni {

class JsonFields {
public:
    // `object` must outlive this reader. `path` prefixes member names ("" at the top level).
    JsonFields(const nlohmann::json& object, std::string path, ErrorCode code)
        : object_(&object), path_(std::move(path)), code_(code) {}

    // Wraps `value` after checking it is an object; `path` names it.
    static JsonFields of_object(const nlohmann::json& value, std::string path, ErrorCode code);

    bool has(std::string_view key) const;   // present and not null
    const nlohmann::json* get(std::string_view key) const;   // nullptr when absent or null

    std::optional<std::string> string(std::string_view key) const;
    // A JSON integer in [0, max]: "must be a non-negative integer" for other values, "is too
    // large" above max.
    std::optional<unsigned> uint(std::string_view key, unsigned max = 0xffffffffu) const;
    std::optional<bool> boolean(std::string_view key) const;
    // A JSON array of strings; empty when absent.
    std::vector<std::string> strings(std::string_view key) const;
    const nlohmann::json* object(std::string_view key) const;   // checked, nullptr when absent
    const nlohmann::json* array(std::string_view key) const;    // checked, nullptr when absent

    std::string name(std::string_view key) const;   // full path of a member
    const std::string& path() const { return path_; }
    ErrorCode code() const { return code_; }

    // "<path.key> must be <requirement>, got <value>".
    [[noreturn]] void fail(std::string_view key, std::string_view requirement,
                           const nlohmann::json& value) const;
    // "<path.key> <problem>" for a value of the right type but an unusable content.
    [[noreturn]] void invalid(std::string_view key, const std::string& problem,
                              std::string details = "") const;

private:
    const nlohmann::json* object_;   // a pointer so readers can be reassigned
    std::string path_;
    ErrorCode code_;
};

}  // namespace rdmanet::cni
