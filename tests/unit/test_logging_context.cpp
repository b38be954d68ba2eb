// The log line's context (command, network, container, interface) is untrusted text: printed as
// written, never read as spdlog pattern flags ("net%d" once logged as "net26", the day).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "ipam_test_util.hpp"
#include "rdmanet/cni/logging/logging.hpp"

TEST_CASE("logging: the context is printed as written, '%' included", "[unit][logging]") {
    ipam_test::TempDir dir;
    const std::string file = dir.sub("plugin.log");
    rdmanet::cni::setup_logging(file, "info", "ADD net-a c1 net%d %Y %v %%");
    spdlog::info("{} stays a message argument", "net%d");
    rdmanet::cni::setup_logging("", "off", "");  // closes the file
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    CHECK_THAT(text.str(), Catch::Contains("ADD net-a c1 net%d %Y %v %%: net%d stays a message argument\n"));
}
