#include "rdmanet/cni/protocol/text.hpp"

#include "rdmanet/base/json_fields.hpp"
#include "rdmanet/base/json_limits.hpp"

namespace rdmanet::cni::text {

namespace {
constexpr auto kReplaceInvalid = nlohmann::json::error_handler_t::replace;
}

std::string quote(std::string_view value) {
    // A message quotes a value to show which one is wrong, not to carry a megabyte of it.
    constexpr std::size_t kLimit = 256;
    if (value.size() > kLimit)
        return nlohmann::json(std::string(value.substr(0, kLimit))).dump(-1, ' ', false, kReplaceInvalid) + "...";
    return nlohmann::json(std::string(value)).dump(-1, ' ', false, kReplaceInvalid);
}

std::string show(const nlohmann::json& value, std::size_t limit) { return base::show_json(value, limit); }

std::string valid_utf8(std::string_view value) {
    // Cheap path first: almost every message is plain ASCII.
    bool ascii = true;
    for (unsigned char c : value) ascii = ascii && c < 0x80;
    if (ascii) return std::string(value);
    // The dump with `replace` is nlohmann's own validator; parsing it back yields the clean string.
    // The whole value is dumped: quote() cuts long ones and appends "...", which is not JSON.
    const auto clean =
        base::parse_json_limited(nlohmann::json(std::string(value)).dump(-1, ' ', false, kReplaceInvalid));
    return clean ? clean.value.get<std::string>() : std::string();
}

std::string_view trim(std::string_view value) {
    constexpr std::string_view kSpace = " \t\r\n\f\v";
    auto first = value.find_first_not_of(kSpace);
    if (first == std::string_view::npos) return {};
    auto last = value.find_last_not_of(kSpace);
    return value.substr(first, last - first + 1);
}

}  // namespace rdmanet::cni::text
