#include <catch2/catch.hpp>

#include "rdmanet/cni/protocol/error.hpp"

using namespace rdmanet::cni;
using nlohmann::json;

TEST_CASE("error JSON carries version, code, msg and details", "[cni][error]") {
    Error error(ErrorCode::invalid_config, "mode \"x\" is not supported", "use macvlan");
    CHECK(error.to_json("1.0.0") == json::parse(R"({"cniVersion":"1.0.0","code":7,
        "msg":"mode \"x\" is not supported","details":"use macvlan"})"));
    CHECK(error.code() == 7);
    CHECK(std::string(error.what()) == "mode \"x\" is not supported");
}

TEST_CASE("error JSON omits empty details", "[cni][error]") {
    auto j = Error(ErrorCode::try_again, "busy").to_json("1.1.0");
    CHECK(j == json::parse(R"({"cniVersion":"1.1.0","code":11,"msg":"busy"})"));
    CHECK_FALSE(j.contains("details"));
}

TEST_CASE("error with a raw plugin code keeps it", "[cni][error]") {
    Error error(142, "from a delegate", "d");
    CHECK(error.code() == 142);
    CHECK(error.to_json("0.4.0")["code"] == 142);
}

TEST_CASE("error JSON stays printable when a message holds invalid UTF-8", "[cni][error]") {
    Error error(ErrorCode::invalid_config, "name \"\xff\xfe\" is invalid", "\xc3");
    auto j = error.to_json("1.0.0");
    std::string printed;
    REQUIRE_NOTHROW(printed = j.dump());
    CHECK(j["msg"].get<std::string>().find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD
    CHECK(j["details"] == "\xef\xbf\xbd");
}
