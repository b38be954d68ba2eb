// CRD schema checks for tests: see crd_schema.hpp.
#include "support/crd_schema.hpp"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include "rdmanet/cni/translate/render.hpp"
#include "support/build_paths.hpp"

namespace rdmanet::test {

using nlohmann::json;

namespace {

bool has_type(const json& value, const std::string& type) {
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    if (type == "string") return value.is_string();
    if (type == "integer") return value.is_number_integer();
    if (type == "number") return value.is_number();
    if (type == "boolean") return value.is_boolean();
    throw std::runtime_error("schema type \"" + type + "\" is not in the checked subset");
}

void check(const json& schema, const json& value, const std::string& at, std::vector<std::string>& problems) {
    const std::string where = at.empty() ? "(object)" : at;
    auto child = [&](const std::string& key) { return at.empty() ? key : at + "." + key; };
    if (schema.contains("type")) {
        const std::string type = schema["type"].get<std::string>();
        if (!has_type(value, type)) {
            problems.push_back(where + ": " + value.type_name() + " where the schema wants " + type);
            return;
        }
    }
    if (value.is_object()) {
        for (const auto& r : schema.value("required", json::array())) {
            if (!value.contains(r.get<std::string>())) problems.push_back(child(r.get<std::string>()) + ": required");
        }
        const bool has_properties = schema.contains("properties");
        const bool has_additional = schema.contains("additionalProperties");
        if (!has_properties && !has_additional) return;  // free-form (metadata)
        for (const auto& [key, v] : value.items()) {
            if (has_properties && schema["properties"].contains(key)) {
                check(schema["properties"][key], v, child(key), problems);
            } else if (has_additional && schema["additionalProperties"].is_object()) {
                check(schema["additionalProperties"], v, child(key), problems);
            } else if (!(has_additional && schema["additionalProperties"] == true)) {
                problems.push_back(child(key) + ": not in the schema (the API server prunes it)");
            }
        }
    } else if (value.is_array() && schema.contains("items")) {
        for (std::size_t i = 0; i < value.size(); ++i)
            check(schema["items"], value[i], child(std::to_string(i)), problems);
    }
}

}  // namespace

json crd_schema(const std::string& file, const std::string& version) {
    const std::string path = rdmanet::test::source_dir() + "/deploy/crds/" + file;
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    const json crd = cni::translate::yaml_to_json(std::string(std::istreambuf_iterator<char>(in), {}));
    for (const auto& v : crd.at("spec").at("versions")) {
        if (v.value("name", "") == version) return v.at("schema").at("openAPIV3Schema");
    }
    throw std::runtime_error(path + " has no version " + version);
}

std::vector<std::string> schema_problems(const json& schema, const json& object) {
    std::vector<std::string> problems;
    check(schema, object, "", problems);
    return problems;
}

}  // namespace rdmanet::test
