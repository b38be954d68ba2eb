// is_valid_mac: syntax check of MACs from configs before netlink sees them.
#include <catch2/catch.hpp>

#include "rdmanet/netns/rtnl.hpp"

using rdmanet::netns::is_valid_mac;

TEST_CASE("is_valid_mac accepts six colon-separated hex pairs in any case", "[mac]") {
    CHECK(is_valid_mac("aa:bb:cc:dd:ee:ff"));
    CHECK(is_valid_mac("AA:BB:CC:DD:EE:FF"));
    CHECK(is_valid_mac("0a:1B:2c:3D:4e:5F"));
    CHECK(is_valid_mac("00:00:00:00:00:00"));  // syntax only: the kernel judges the value
    CHECK(is_valid_mac("01:00:5e:00:00:01"));
}

TEST_CASE("is_valid_mac rejects everything else", "[mac]") {
    for (const char* bad :
         {"", "aa:bb:cc:dd:ee", "aa:bb:cc:dd:ee:ff:00", "aa-bb-cc-dd-ee-ff", "aabb.ccdd.eeff", "aabbccddeeff",
          "a:bb:cc:dd:ee:ff", "aaa:bb:cc:dd:ee:f", "gg:bb:cc:dd:ee:ff", "aa:bb:cc:dd:ee:fg", " aa:bb:cc:dd:ee:ff",
          "aa:bb:cc:dd:ee:ff ", "aa:bb:cc:dd:ee:ff\n", "aa::bb:cc:dd:ee:f", "aa:bb:cc:dd:ee:", "0x:bb:cc:dd:ee:ff",
          "00:00:00:00:00:00:00:00:fe:80:00:00:00:00:00:00:00:00:00:01"}) {
        INFO("input: '" << bad << "'");
        CHECK_FALSE(is_valid_mac(bad));
    }
    CHECK_FALSE(is_valid_mac(std::string("aa:bb:cc:dd:ee:f\0", 17)));
}
