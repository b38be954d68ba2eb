#pragma once
// Helpers for the CNI engine's unit tests.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "rdmanet/cni/protocol/error.hpp"

namespace rdmanet::cni::testing {

// Runs `f`, which must throw cni::Error, and returns that error for inspection.
template <class F>
Error expect_cni_error(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e;
    }
    FAIL("expected rdmanet::cni::Error, nothing was thrown");
    throw std::logic_error("unreachable");
}

}  // namespace rdmanet::cni::testing

// Asserts that `expr` throws cni::Error with `expected_code` and a msg containing `fragment`.
#define REQUIRE_CNI_ERROR(expr, expected_code, fragment)                                    \
    do {                                                                                    \
        auto cni_error_ = ::rdmanet::cni::testing::expect_cni_error([&] { (void)(expr); }); \
        CHECK(cni_error_.code() == static_cast<int>(expected_code));                        \
        CHECK_THAT(cni_error_.msg(), Catch::Matchers::Contains(fragment));                  \
    } while (false)
