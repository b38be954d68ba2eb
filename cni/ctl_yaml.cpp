// YAML <-> JSON for rdmanetctl (network specs in, NetworkAttachmentDefinitions out). yaml-cpp is
// linked into rdmanetctl only: the plugin never reads YAML and must not pay for loading it.
#include <cerrno>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "rdmanet/cni/ctl_admin.hpp"

namespace rdmanet::cni::ctl {

namespace {

// Plain (unquoted) scalars typed as the YAML 1.2 core schema does, which is what kubectl and
// Kubernetes apply to manifests: "true" is a bool, "8" an int, "0000:af:06.0" a string.
nlohmann::json plain_scalar(const std::string& s) {
    static const std::regex kNull("null|Null|NULL|~|");
    static const std::regex kTrue("true|True|TRUE");
    static const std::regex kFalse("false|False|FALSE");
    static const std::regex kInt("[-+]?[0-9]+");
    static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
    if (std::regex_match(s, kNull)) return nullptr;
    if (std::regex_match(s, kTrue)) return true;
    if (std::regex_match(s, kFalse)) return false;
    if (std::regex_match(s, kInt)) {
        errno = 0;
        char* end = nullptr;
        if (s[0] == '-') {
            long long v = std::strtoll(s.c_str(), &end, 10);
            if (errno == 0) return v;
        } else {
            unsigned long long v = std::strtoull(s.c_str(), &end, 10);
            if (errno == 0) return v;
        }
        return s;   // out of range: keep the text rather than a wrong number
    }
    if (std::regex_match(s, kFloat)) return std::strtod(s.c_str(), nullptr);
    return s;
}

nlohmann::json to_json(const YAML::Node& node, int depth) {
    // Manifests are shallow; a bound keeps a hostile document from exhausting the stack.
    if (depth > 64) throw std::runtime_error("YAML nested more than 64 levels deep");
    switch (node.Type()) {
        case YAML::NodeType::Undefined:
        case YAML::NodeType::Null: return nullptr;
        case YAML::NodeType::Scalar:
            // yaml-cpp tags plain scalars "?" and quoted ones "!" (non-specific tags).
            if (node.Tag() == "?") return plain_scalar(node.Scalar());
            return node.Scalar();
        case YAML::NodeType::Sequence: {
            auto array = nlohmann::json::array();
            for (const auto& item : node) array.push_back(to_json(item, depth + 1));
            return array;
        }
        case YAML::NodeType::Map: {
            auto object = nlohmann::json::object();
            for (const auto& kv : node) {
                if (!kv.first.IsScalar()) throw std::runtime_error("YAML map keys must be scalars");
                object[kv.first.Scalar()] = to_json(kv.second, depth + 1);
            }
            return object;
        }
    }
    return nullptr;
}

void emit(YAML::Emitter& e, const nlohmann::json& j, bool literal_strings = false) {
    if (j.is_object()) {
        e << YAML::BeginMap;
        for (const auto& [key, value] : j.items()) {
            e << YAML::Key << key << YAML::Value;
            emit(e, value, key == "config");
        }
        e << YAML::EndMap;
    } else if (j.is_array()) {
        e << YAML::BeginSeq;
        for (const auto& value : j) emit(e, value);
        e << YAML::EndSeq;
    } else if (j.is_string()) {
        const auto& s = j.get_ref<const std::string&>();
        if (literal_strings) {
            // spec.config: pretty-printed (key order kept) so that admins can read the NAD.
            auto config = nlohmann::ordered_json::parse(s, nullptr, false);
            e << YAML::Literal << (config.is_discarded() ? s : config.dump(2));
        } else {
            // Quoted whenever a plain scalar would read back as something else (a bool, a number).
            auto round_trip = plain_scalar(s);
            if (!round_trip.is_string() || s.find_first_of(":#{}[],&*!|>'\"%@`") != std::string::npos)
                e << YAML::DoubleQuoted << s;
            else
                e << s;
        }
    } else if (j.is_null()) {
        e << YAML::Null;
    } else {
        e << j.dump();
    }
}

}  // namespace

std::vector<nlohmann::json> yaml_documents_to_json(const std::string& text) {
    std::vector<YAML::Node> docs;
    try {
        docs = YAML::LoadAll(text);
    } catch (const YAML::Exception& e) {
        throw std::runtime_error(std::string("not valid YAML: ") + e.what());
    }
    std::vector<nlohmann::json> out;
    for (const auto& doc : docs) {
        if (doc.IsNull()) continue;   // an empty document between "---" separators
        out.push_back(to_json(doc, 0));
    }
    return out;
}

nlohmann::json yaml_to_json(const std::string& text) {
    auto docs = yaml_documents_to_json(text);
    if (docs.size() != 1)
        throw std::runtime_error("expected one YAML document, found " + std::to_string(docs.size()));
    return docs.front();
}

std::string nad_yaml(const nlohmann::json& nad) {
    // Kubernetes' usual field order rather than nlohmann's alphabetical one.
    YAML::Emitter e;
    e.SetIndent(2);
    e << YAML::BeginMap;
    for (const char* key : {"apiVersion", "kind", "metadata", "spec"}) {
        if (!nad.contains(key)) continue;
        e << YAML::Key << key << YAML::Value;
        emit(e, nad.at(key));
    }
    for (const auto& [key, value] : nad.items()) {
        if (key == "apiVersion" || key == "kind" || key == "metadata" || key == "spec") continue;
        e << YAML::Key << key << YAML::Value;
        emit(e, value);
    }
    e << YAML::EndMap;
    if (!e.good()) throw std::runtime_error("cannot write YAML: " + e.GetLastError());
    return std::string(e.c_str()) + "\n";
}

}  // namespace rdmanet::cni::ctl
