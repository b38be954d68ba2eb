#include <catch2/catch.hpp>

#include "rdmanet/cni/protocol/version.hpp"

using namespace rdmanet::cni;

TEST_CASE("supported versions are exactly 0.3.0 to 1.1.0", "[cni][version]") {
    for (auto v : {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}) CHECK(is_supported_version(v));
    for (auto v : {"", "0.1.0", "0.2.0", "1.0", "1.2.0", "v1.0.0", "1.0.0 ", "01.0.0"})
        CHECK_FALSE(is_supported_version(v));
    CHECK(kLatestVersion == "1.1.0");
}

TEST_CASE("versions compare semantically, not as text", "[cni][version]") {
    CHECK(compare_versions("0.4.0", "0.3.1") > 0);
    CHECK(compare_versions("0.3.1", "0.4.0") < 0);
    CHECK(compare_versions("1.0.0", "1.0.0") == 0);
    CHECK(compare_versions("0.10.0", "0.9.0") > 0);  // text order would say less
    CHECK(compare_versions("1.1.0", "1.0.0") > 0);
    CHECK(compare_versions("1.0", "1.0.0") == 0);    // missing part is 0
    CHECK(compare_versions("x.1.0", "0.1.0") == 0);  // malformed part is 0
}
