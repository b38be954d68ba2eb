#include <catch2/catch.hpp>

#include <string>

#include "cni_test_helpers.hpp"
#include "rdmanet/cni/protocol/json.hpp"

using namespace rdmanet::cni;

namespace {
std::string nested_arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }
}  // namespace

TEST_CASE("bounded parse accepts ordinary JSON", "[cni][json]") {
    auto j = parse_json_bounded(R"({"a":[1,{"b":"c"}],"d":null})");
    CHECK(j["a"][1]["b"] == "c");
    CHECK(parse_json_bounded("42") == 42);
}

TEST_CASE("bounded parse allows exactly max depth", "[cni][json]") {
    CHECK_NOTHROW(parse_json_bounded(nested_arrays(kMaxJsonDepth)));
    REQUIRE_CNI_ERROR(parse_json_bounded(nested_arrays(kMaxJsonDepth + 1)), ErrorCode::decode_failure,
                      "deeper than 64");
    CHECK_NOTHROW(parse_json_bounded(nested_arrays(3), 3));
    REQUIRE_CNI_ERROR(parse_json_bounded(nested_arrays(4), 3), ErrorCode::decode_failure, "deeper than 3");
}

TEST_CASE("a 100000-deep array is rejected without crashing", "[cni][json]") {
    REQUIRE_CNI_ERROR(parse_json_bounded(nested_arrays(100000)), ErrorCode::decode_failure, "at byte 65");
    // Unbalanced and object-nested forms too.
    REQUIRE_CNI_ERROR(parse_json_bounded(std::string(100000, '[')), ErrorCode::decode_failure, "deeper");
    std::string objects;
    for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
    REQUIRE_CNI_ERROR(parse_json_bounded(objects), ErrorCode::decode_failure, "deeper");
}

TEST_CASE("brackets inside strings are not nesting", "[cni][json]") {
    std::string brackets(1000, '[');
    auto j = parse_json_bounded("{\"s\":\"" + brackets + "\"}", 2);
    CHECK(j["s"] == brackets);
    // An escaped quote does not end the string, so the brackets after it are still text.
    auto escaped = parse_json_bounded(R"(["a\"[[[[[[", "]]]]\\"])", 1);
    CHECK(escaped[0] == "a\"[[[[[[");
    CHECK(escaped[1] == "]]]]\\");
}

TEST_CASE("malformed JSON is a decode failure with the position", "[cni][json]") {
    REQUIRE_CNI_ERROR(parse_json_bounded("{\"a\":"), ErrorCode::decode_failure, "invalid JSON");
    REQUIRE_CNI_ERROR(parse_json_bounded(""), ErrorCode::decode_failure, "invalid JSON");
    REQUIRE_CNI_ERROR(parse_json_bounded("{\"a\":1} trailing"), ErrorCode::decode_failure, "column 11");
    REQUIRE_CNI_ERROR(parse_json_bounded("{'a':1}"), ErrorCode::decode_failure, "invalid JSON");
    // Invalid UTF-8 inside a string is rejected here, before a dump() could throw later.
    REQUIRE_CNI_ERROR(parse_json_bounded("\"\xff\""), ErrorCode::decode_failure, "invalid JSON");
    // A number overflowing a double is nlohmann's out_of_range, not parse_error: still bad input
    // (fuzz_prev_result found it escaping as an internal error; tests/fuzz/regressions).
    REQUIRE_CNI_ERROR(parse_json_bounded("666e66666660"), ErrorCode::decode_failure, "number overflow");
    REQUIRE_CNI_ERROR(parse_json_bounded(R"({"mtu": 1e400})"), ErrorCode::decode_failure, "number overflow");
}
