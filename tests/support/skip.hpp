#pragma once
// Skipping a test case that needs a tool the machine lacks, in ctest's sense: Catch2 v2 has no
// skip, so the case prints why and ends its process with kSkipExitCode, which the suites'
// catch_discover_tests map to "skipped" (SKIP_RETURN_CODE). ctest runs every case in a process of
// its own, so only this case is skipped; run by hand, the program stops there with 77, never a
// pass. The same code as the real API server's suites (apiserver/real_apiserver.hpp).
#include <cstdio>
#include <cstdlib>
#include <string>

namespace rdmanet::test {

inline constexpr int kSkipExitCode = 77;

[[noreturn]] inline void skip_test(const std::string& reason) {
    std::fprintf(stderr, "SKIPPED: %s\n", reason.c_str());
    std::fflush(nullptr);
    std::_Exit(kSkipExitCode);
}

}  // namespace rdmanet::test
