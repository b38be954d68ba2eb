#pragma once
// Small text helpers private to the CNI engine: quoting untrusted values into messages.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rdmanet::cni::text {

// `value` as a JSON string literal ("a\"b"), invalid UTF-8 replaced: untrusted input lands in
// error messages that are printed as JSON, and a raw control byte or broken UTF-8 would make the
// printer throw at the worst moment. Values longer than 256 bytes are cut, with "..." after.
std::string quote(std::string_view value);
// A JSON value (of any type) printed compactly for a message, cut at `limit` characters.
std::string show(const nlohmann::json& value, std::size_t limit = 80);
// `value` with invalid UTF-8 sequences replaced by U+FFFD, so it can be stored in a json string.
std::string valid_utf8(std::string_view value);
// Leading and trailing whitespace removed.
std::string_view trim(std::string_view value);

}  // namespace rdmanet::cni::text
