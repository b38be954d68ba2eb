#include "rdmanet/cni/protocol/json_fields.hpp"

#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

JsonFields JsonFields::of_object(const nlohmann::json& value, std::string path, ErrorCode code) {
    if (!value.is_object())
        throw Error(code, path + " must be a JSON object, got " + text::show(value));
    return JsonFields(value, std::move(path), code);
}

std::string JsonFields::name(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const nlohmann::json* JsonFields::get(std::string_view key) const {
    auto it = object_->find(key);
    if (it == object_->end() || it->is_null()) return nullptr;
    return &*it;
}

bool JsonFields::has(std::string_view key) const { return get(key) != nullptr; }

void JsonFields::fail(std::string_view key, std::string_view requirement,
                      const nlohmann::json& value) const {
    throw Error(code_, name(key) + " must be " + std::string(requirement) + ", got " +
                           text::show(value));
}

void JsonFields::invalid(std::string_view key, const std::string& problem,
                         std::string details) const {
    throw Error(code_, name(key) + " " + problem, std::move(details));
}

std::optional<std::string> JsonFields::string(std::string_view key) const {
    const auto* value = get(key);
    if (!value) return std::nullopt;
    if (!value->is_string()) fail(key, "a string", *value);
    return value->get<std::string>();
}

std::optional<unsigned> JsonFields::uint(std::string_view key, unsigned max) const {
    const auto* value = get(key);
    if (!value) return std::nullopt;
    // nlohmann stores parsed non-negative integers as unsigned, built ones may be signed.
    bool integer = value->is_number_unsigned() ||
                   (value->is_number_integer() && value->get<std::int64_t>() >= 0);
    if (!integer) fail(key, "a non-negative integer", *value);
    auto number = value->get<std::uint64_t>();
    if (number > max)
        invalid(key, std::to_string(number) + " is too large: at most " + std::to_string(max));
    return static_cast<unsigned>(number);
}

std::optional<bool> JsonFields::boolean(std::string_view key) const {
    const auto* value = get(key);
    if (!value) return std::nullopt;
    if (!value->is_boolean()) fail(key, "true or false", *value);
    return value->get<bool>();
}

std::vector<std::string> JsonFields::strings(std::string_view key) const {
    std::vector<std::string> items;
    const auto* list = array(key);
    if (!list) return items;
    for (const auto& item : *list) {
        if (!item.is_string()) fail(key, "a list of strings", *list);
        items.push_back(item.get<std::string>());
    }
    return items;
}

const nlohmann::json* JsonFields::object(std::string_view key) const {
    const auto* value = get(key);
    if (value && !value->is_object()) fail(key, "a JSON object", *value);
    return value;
}

const nlohmann::json* JsonFields::array(std::string_view key) const {
    const auto* value = get(key);
    if (value && !value->is_array()) fail(key, "a JSON list", *value);
    return value;
}

}  // namespace rdmanet::cni
