#pragma once
// The one way the project parses JSON that comes from outside it: CNI stdin and the plugins'
// results, files on the node (state, policy, device-info, block caches), API server bodies, and
// JSON carried inside other documents (a CR's `ipam` or `metaPlugins` string, a NAD's
// spec.config). Every such text gets the same two limits, checked before nlohmann builds
// anything:
//   - nesting: at most kMaxJsonDepth levels of '[' / '{'. nlohmann's copy, dump and comparison
//     recurse once per level, so a document nested a few ten thousand levels deep (a few hundred
//     KB) overflows the stack the first time it is copied. Real inputs are shallow: Kubernetes
//     objects nest under 20 levels, CNI configs under 10.
//   - size: at most kMaxJsonBytes bytes. A parsed tree costs several times its text (16 bytes a
//     value plus the containers), and nothing legitimate comes close: etcd refuses an object
//     above 1.5 MiB, and a CNI config is a few KB.
// The result says what went wrong in words a user can act on; each caller turns it into its own
// error type and code (a CNI decode failure, an IPAM I/O error, a render message).
// Header-only: base depends on nothing but nlohmann and the standard library.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace rdmanet::base {

inline constexpr std::size_t kMaxJsonDepth = 64;
inline constexpr std::size_t kMaxJsonBytes = std::size_t{16} << 20;  // 16 MiB

struct JsonLimits {
    std::size_t max_depth = kMaxJsonDepth;
    std::size_t max_bytes = kMaxJsonBytes;
};

// A parse's outcome: `value` when `error` is empty, else `value` is null and `error` says why
// ("JSON nests deeper than 64 levels (at byte 70)", "JSON text of 17000000 bytes is larger than
// the limit of 16777216 bytes", "invalid JSON: ..." with the parser's position).
template <class Json = nlohmann::json>
struct ParsedJson {
    Json value;
    std::string error;
    explicit operator bool() const { return error.empty(); }
};

namespace json_limits_detail {

// Walks the raw text once, counting '[' and '{' outside string literals, and returns the offset
// of the first bracket deeper than `max_depth` (npos when none). It does not validate: nlohmann's
// lexer splits strings exactly the same way (a '"' outside a string always starts one, a
// backslash always escapes the next byte), so on valid JSON the count is exact, and invalid JSON
// is refused by the real parse that follows.
inline std::size_t too_deep_at(std::string_view text, std::size_t max_depth) {
    std::size_t depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;  // skip the escaped byte, which may be a quote
            else if (c == '"')
                in_string = false;
            continue;
        }
        switch (c) {
        case '"': in_string = true; break;
        case '[':
        case '{':
            if (++depth > max_depth) return i;
            break;
        case ']':
        case '}':
            if (depth > 0) --depth;
            break;
        default: break;
        }
    }
    return std::string_view::npos;
}

}  // namespace json_limits_detail

// Parses `text` as one JSON document (nlohmann::json, or nlohmann::ordered_json where key order
// is kept) within `limits`. Never throws for bad input; std::bad_alloc still propagates.
template <class Json = nlohmann::json>
ParsedJson<Json> parse_json_limited(std::string_view text, JsonLimits limits = {}) {
    ParsedJson<Json> out;
    if (text.size() > limits.max_bytes) {
        out.error = "JSON text of " + std::to_string(text.size()) + " bytes is larger than the limit of " +
                    std::to_string(limits.max_bytes) + " bytes";
        return out;
    }
    if (const auto at = json_limits_detail::too_deep_at(text, limits.max_depth); at != std::string_view::npos) {
        out.error = "JSON nests deeper than " + std::to_string(limits.max_depth) + " levels (at byte " +
                    std::to_string(at + 1) + ")";
        return out;
    }
    try {
        out.value = Json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        // parse_error: what() carries the byte position and what the parser expected there.
        // out_of_range (406): a number whose exponent overflows a double (1e99999): bad input too.
        out.value = nullptr;
        out.error = std::string("invalid JSON: ") + e.what();
    }
    return out;
}

}  // namespace rdmanet::base
