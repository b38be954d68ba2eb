// base::JsonFields with an injected Raise: the wording every layer shares, the null policy, and
// the element readers.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "rdmanet/base/json_fields.hpp"

namespace {

using nlohmann::json;
using rdmanet::base::JsonNull;

struct TestFailure : std::runtime_error {
    std::string details;
    TestFailure(const std::string& message, std::string details_)
        : std::runtime_error(message), details(std::move(details_)) {}
};

struct RaiseTestFailure {
    [[noreturn]] void operator()(std::string message, std::string details) const {
        throw TestFailure(message, std::move(details));
    }
};

using Fields = rdmanet::base::JsonFields<RaiseTestFailure>;

}  // namespace

TEST_CASE("JsonFields raises the caller's error with the member's full path", "[unit][json_fields]") {
    const json j = json::parse(R"({"name": 5, "mtu": -1, "big": 70000, "list": [1], "obj": [], "ok": "x"})");
    const Fields f(j, "conf", RaiseTestFailure{});
    CHECK(f.string("ok") == "x");
    CHECK_FALSE(f.string("absent"));
    CHECK_THROWS_WITH(f.string("name"), "conf.name must be a string, got 5");
    CHECK_THROWS_WITH(f.uint("mtu"), "conf.mtu must be a non-negative integer, got -1");
    CHECK_THROWS_WITH(f.uint("big", 65535), "conf.big 70000 is too large: at most 65535");
    CHECK_THROWS_WITH(f.strings("list"), "conf.list[0] must be a string, got 1");
    CHECK_THROWS_WITH(f.child("obj"), "conf.obj must be a JSON object, got []");
    bool raised = false;
    try {
        f.invalid("ok", "is wrong", "how to fix");
    } catch (const TestFailure& e) {
        raised = true;
        CHECK(std::string(e.what()) == "conf.ok is wrong");
        CHECK(e.details == "how to fix");
    }
    CHECK(raised);
    CHECK_THROWS_WITH(Fields::of_object(json(3), "top", RaiseTestFailure{}), "top must be a JSON object, got 3");
}

TEST_CASE("JsonFields: null is absent by default, a wrong value when the file is strict", "[unit][json_fields]") {
    const json j = json::parse(R"({"flag": null})");
    const Fields lenient(j, "", RaiseTestFailure{});
    CHECK_FALSE(lenient.has("flag"));
    CHECK_FALSE(lenient.boolean("flag"));
    const Fields strict(j, "", RaiseTestFailure{}, JsonNull::value);
    CHECK(strict.has("flag"));
    CHECK_THROWS_WITH(strict.boolean("flag"), "flag must be true or false, got null");
}

TEST_CASE("JsonFields: list elements are objects named key[i]", "[unit][json_fields]") {
    const json j = json::parse(R"({"routes": [{"dst": "10.0.0.0/8"}, {"dst": 7}], "bad": [{}, "x"]})");
    const Fields f(j, "ipam", RaiseTestFailure{});
    std::vector<std::string> paths;
    CHECK_THROWS_WITH(f.for_each_object("routes",
                                        [&](const Fields& e) {
                                            paths.push_back(e.path());
                                            e.string("dst");
                                        }),
                      "ipam.routes[1].dst must be a string, got 7");
    CHECK(paths == std::vector<std::string>{"ipam.routes[0]", "ipam.routes[1]"});
    CHECK_THROWS_WITH(f.for_each_object(
                          "bad", [](const Fields&) {}, "an object {\"dst\": CIDR}"),
                      "ipam.bad[1] must be an object {\"dst\": CIDR}, got \"x\"");
}
