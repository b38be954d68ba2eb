#pragma once
// The serialized text of each member of one JSON object, kept in key order: the members of an
// IPPool's spec.allocations. A write that changes a few entries of a 10k-entry pool re-serializes
// only those (update()), and writing the object (json_writer.hpp) copies the others' text.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace apiserver {

class MemberText {
public:
    // (Re)builds the texts of every member of `object`.
    void rebuild(const nlohmann::json& object);
    // Brings the texts of `keys` in line with `object` (members added, changed or removed).
    void update(const nlohmann::json& object, const std::vector<std::string>& keys);
    // {"k":v,...} exactly as write_json writes the object.
    void write(std::string& out) const;

private:
    std::vector<std::pair<std::string, std::string>> members_;  // key -> "key":value, sorted as nlohmann's std::map
};

// `"key":value` (json_writer.cpp).
void write_member(const std::string& key, const nlohmann::json& value, std::string& out);

}  // namespace apiserver
