#pragma once
// Serializes a JSON tree to exactly the text nlohmann's dump() makes (compact, UTF-8 passed
// through, the same escapes and number formats), several times faster: the test API server
// writes the whole IPPool (~700 kB at 10k entries) once per pool version, under its store lock,
// and nlohmann's serializer (a UTF-8 decoder state machine per character) made that the largest
// CPU cost of the benchmark's server. Strings must be valid UTF-8, as they are in any tree that
// nlohmann parsed (the server's objects all come from parsed request bodies).
#include <string>

#include <nlohmann/json.hpp>

namespace apiserver {

void write_json(const nlohmann::json& value, std::string& out);

// Writes `value` with the text of one object inside it (found by address) coming from a cache
// instead (member_text.hpp): on a write to a few allocation entries, only those are serialized.
class MemberText;
void write_json(const nlohmann::json& value, std::string& out, const nlohmann::json* cached_node,
                const MemberText& cache);

inline std::string to_json_text(const nlohmann::json& value) {
    std::string out;
    write_json(value, out);
    return out;
}

}  // namespace apiserver
