#pragma once
// Checks objects against the openAPIV3Schema of a CRD in deploy/crds/, as the API server would
// before storing them: the subset those CRDs use - type (object, array, string, integer, number,
// boolean), required, properties, items, additionalProperties. A field the schema does not declare
// is a problem too: the API server would prune it without a word, so the object read back would
// differ from the one written. An object schema with neither properties nor additionalProperties
// (metadata) is not looked into.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmanet::test {

// The openAPIV3Schema of `version` in the CRD file deploy/crds/<file> of the source tree.
nlohmann::json crd_schema(const std::string& file, const std::string& version = "v1alpha1");

// One line per problem ("spec.allocations.5.podref: required"); empty when `object` is valid.
std::vector<std::string> schema_problems(const nlohmann::json& schema, const nlohmann::json& object);

}  // namespace rdmanet::test
