// Where the checkout and this build's binaries are, for the test programs.
#pragma once

#include <string>

namespace rdmanet::test {

// The checkout (conf/, deploy/, tests/fixtures/ ...).
std::string source_dir();
// <build>/bin: rdmanet, rdmanet-ipam, rdmanetctl, the test API server.
std::string bin_dir();
// <build>/test-bin: the test-only binaries (rdmanet-fakekernel).
std::string test_bin_dir();

}  // namespace rdmanet::test
