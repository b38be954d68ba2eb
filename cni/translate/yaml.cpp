// JSON -> YAML for rdmanetctl (NetworkAttachmentDefinitions out; reading is yaml_read.cpp).
// yaml-cpp is linked into rdmanetctl only: the plugin never reads YAML and must not pay for it.
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "rdmanet/cni/translate/render.hpp"
#include "rdmanet/base/json_limits.hpp"

namespace rdmanet::cni::translate {

namespace {

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
            const auto config = base::parse_json_limited<nlohmann::ordered_json>(s);
            e << YAML::Literal << (config ? config.value.dump(2) : s);
        } else {
            // Quoted whenever a plain scalar would read back as something else (a bool, a number).
            auto round_trip = yaml_plain_scalar(s);
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

nlohmann::json yaml_to_json(const std::string& text) {
    auto docs = yaml_documents_to_json(text);
    if (docs.size() != 1) throw std::runtime_error("expected one YAML document, found " + std::to_string(docs.size()));
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

}  // namespace rdmanet::cni::translate
