#include "support/build_paths.hpp"

// The only file compiled with the checkout's and the build's absolute paths (CMake passes them as
// definitions of this file alone). Were they definitions of every test file, each clone in a new
// folder (CI clones into a new one each time) would compile every test program again: ccache
// rewrites the paths of a command line relative to CCACHE_BASEDIR, but not the values of -D.
namespace rdmanet::test {

std::string source_dir() { return RDMANET_SOURCE_DIR; }
std::string bin_dir() { return RDMANET_BIN_DIR; }
std::string test_bin_dir() { return RDMANET_TEST_BIN_DIR; }

}  // namespace rdmanet::test
