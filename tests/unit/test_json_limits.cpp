#include <catch2/catch.hpp>

#include <string>

#include "rdmanet/base/json_limits.hpp"

using rdmanet::base::JsonLimits;
using rdmanet::base::kMaxJsonBytes;
using rdmanet::base::kMaxJsonDepth;
using rdmanet::base::parse_json_limited;

TEST_CASE("parse_json_limited: ordinary JSON, in either key order kind", "[unit][json_limits]") {
    auto parsed = parse_json_limited(R"({"b":1,"a":[true,null]})");
    REQUIRE(parsed);
    CHECK(parsed.error.empty());
    CHECK(parsed.value["a"][0] == true);
    auto ordered = parse_json_limited<nlohmann::ordered_json>(R"({"b":1,"a":2})");
    REQUIRE(ordered);
    CHECK(ordered.value.begin().key() == "b");  // the order as written, not sorted
}

TEST_CASE("parse_json_limited: one depth limit, checked before a tree is built", "[unit][json_limits]") {
    const auto nested = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
    CHECK(parse_json_limited(nested(kMaxJsonDepth)));
    auto deep = parse_json_limited(nested(kMaxJsonDepth + 1));
    CHECK_FALSE(deep);
    CHECK(deep.value.is_null());
    CHECK(deep.error == "JSON nests deeper than 64 levels (at byte 65)");
    // 200k levels (a few hundred KB): refused, not a stack overflow.
    std::string objects;
    for (int i = 0; i < 200000; ++i) objects += "{\"a\":";
    CHECK_THAT(parse_json_limited<nlohmann::ordered_json>(objects).error, Catch::Contains("deeper than 64"));
    CHECK_FALSE(parse_json_limited(nested(4), JsonLimits{3, kMaxJsonBytes}));
}

TEST_CASE("parse_json_limited: one size limit, checked before parsing", "[unit][json_limits]") {
    const std::string big = "\"" + std::string(100, 'x') + "\"";
    CHECK(parse_json_limited(big, JsonLimits{kMaxJsonDepth, big.size()}));
    auto refused = parse_json_limited(big, JsonLimits{kMaxJsonDepth, big.size() - 1});
    CHECK_FALSE(refused);
    CHECK(refused.error == "JSON text of 102 bytes is larger than the limit of 101 bytes");
    // The default: 16 MiB; one byte more is refused without being read as JSON.
    const std::string over(kMaxJsonBytes + 1, ' ');
    CHECK_THAT(parse_json_limited(over).error, Catch::Contains("larger than the limit of 16777216 bytes"));
}

TEST_CASE("parse_json_limited: malformed JSON says where", "[unit][json_limits]") {
    CHECK_THAT(parse_json_limited("{\"a\":1} x").error,
               Catch::StartsWith("invalid JSON: ") && Catch::Contains("column 9"));
    CHECK_THAT(parse_json_limited("1e400").error, Catch::Contains("number overflow"));
    CHECK_THAT(parse_json_limited("").error, Catch::StartsWith("invalid JSON"));
}
