#include "rdmanet/cni/protocol/json.hpp"

#include <string>

#include "rdmanet/cni/protocol/error.hpp"

namespace rdmanet::cni {

namespace {

// Walks the raw text once, counting '[' and '{' outside string literals, and fails at the first
// bracket that goes deeper than `max_depth`. This runs before nlohmann builds anything, so an
// attacker-sized nesting never reaches a recursive walk. It does not validate: nlohmann's
// lexer splits strings exactly the same way (a '"' outside a string always starts one, a
// backslash always escapes the next byte), so on valid JSON the count is exact, and invalid JSON
// is rejected by the real parse that follows.
void check_depth(std::string_view text, std::size_t max_depth) {
    std::size_t depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;          // skip the escaped byte, which may be a quote
            else if (c == '"') in_string = false;
            continue;
        }
        switch (c) {
            case '"': in_string = true; break;
            case '[':
            case '{':
                if (++depth > max_depth)
                    throw Error(ErrorCode::decode_failure,
                                "JSON nests deeper than " + std::to_string(max_depth) +
                                    " levels (at byte " + std::to_string(i + 1) + ")");
                break;
            case ']':
            case '}':
                if (depth > 0) --depth;
                break;
            default: break;
        }
    }
}

}  // namespace

nlohmann::json parse_json_bounded(std::string_view text, std::size_t max_depth) {
    check_depth(text, max_depth);
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        // parse_error: e.what() carries the byte position and what the parser expected there.
        // out_of_range (406): a number whose exponent overflows a double, e.g. 1e99999 (found by
        // fuzz_prev_result); it is bad input too, not an internal error.
        throw Error(ErrorCode::decode_failure, std::string("invalid JSON: ") + e.what());
    }
}

}  // namespace rdmanet::cni
