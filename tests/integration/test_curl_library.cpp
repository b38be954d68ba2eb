// libcurl is loaded at first use of the Kubernetes datastore, not linked (ipam/kube/curl_library.hpp).
#include <catch2/catch.hpp>

#include <string>

#include "../../ipam/kube/curl_library.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "support/process.hpp"

using namespace rdmanet::ipam;
using namespace rdmanet::ipam::kube;

TEST_CASE("curl library: loaded by soname with every symbol the client uses", "[kube][curl]") {
    const CurlLibrary& lib = curl_library();
    CHECK(lib.easy_init != nullptr);
    CHECK(lib.easy_setopt != nullptr);
    CHECK(lib.slist_free_all != nullptr);
    CHECK(&curl_library() == &lib);   // once per process
    CURL* handle = lib.easy_init();
    REQUIRE(handle);
    CHECK(std::string(lib.easy_strerror(CURLE_COULDNT_CONNECT)).find("connect") != std::string::npos);
    lib.easy_cleanup(handle);
}

TEST_CASE("curl library: a node without it gets a message saying what to install", "[kube][curl]") {
    try {
        load_curl_library("libcurl-rdmanet-not-installed.so.4");
        FAIL("loaded a library that does not exist");
    } catch (const IpamError& e) {
        CHECK(e.code == codes::io_failure);
        CHECK_THAT(e.msg, Catch::Contains("libcurl-rdmanet-not-installed.so.4") &&
                              Catch::Contains("apt-get install libcurl4") && Catch::Contains("\"local\""));
    }
}

// The point of loading it late: the plugins start without libcurl and its dependencies.
// LD_TRACE_LOADED_OBJECTS makes the dynamic loader list what it would load (ldd's method).
TEST_CASE("curl library: the plugin binaries do not load libcurl at start", "[kube][curl]") {
    for (const std::string& binary : {"rdmanet", "rdmanet-ipam"}) {
        INFO(binary);
        const auto r = rdmanet::test::run_process({std::string(RDMANET_BIN_DIR) + "/" + binary},
                                                  {{"LD_TRACE_LOADED_OBJECTS", "1"}});
        CHECK(r.out.find("libc.so") != std::string::npos);   // the listing worked
        CHECK(r.out.find("libcurl") == std::string::npos);
        CHECK(r.out.find("libssl") == std::string::npos);
    }
}
