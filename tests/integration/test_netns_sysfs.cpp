// with_netns_sysfs on the real kernel: a sysfs mounted from inside another network namespace, in
// a private mount namespace of a helper thread, shows that namespace's namespace-tagged class
// entries (class/net here; class/infiniband is tagged the same way for RDMA devices owned by a
// pod in exclusive mode), and nothing of it leaks to the caller's /sys.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "netns_helpers.hpp"
#include "rdmanet/netns/rdma_gids.hpp"
#include "rdmanet/netns/sysfs.hpp"

using namespace rdmanet;
using namespace rdmanet::test;

TEST_CASE("with_netns_sysfs shows the namespace's own class entries, privately",
          "[netns][integration][rdma-gids-names]") {
    HostAndPod hp("sh", "sp");
    ScopedVeth veth{&hp.pod, &hp.pod, "sy"};
    // Only sysfs mounts are compared: every network namespace another test adds or removes
    // beside this one (ctest -j) is a mount in this table too.
    const auto sysfs_mounts = [] {
        std::ifstream in("/proc/self/mountinfo");
        std::string line, kept;
        while (std::getline(in, line))
            if (line.find(" - sysfs ") != std::string::npos) kept += line + "\n";
        return kept;
    };
    const std::string mounts_before = sysfs_mounts();

    std::vector<std::string> seen;
    netns::with_netns_sysfs(hp.pod_ns, [&](const netns::Sysfs& sysfs) {
        seen = netns::sorted_entry_names(sysfs.root() + "/class/net");
        // A GID table read through the same view: a device no node has, so none exists (a real
        // name such as rxe0 would be seen here in shared RDMA netns mode, from every namespace).
        CHECK_FALSE(netns::read_gid_table(sysfs, "rdmanet-none0").exists);
    });
    CHECK(std::find(seen.begin(), seen.end(), veth.name_a()) != seen.end());
    CHECK(std::find(seen.begin(), seen.end(), "lo") != seen.end());
    // The caller's /sys still shows its own namespace: the veth is not there.
    CHECK_FALSE(std::filesystem::exists("/sys/class/net/" + veth.name_a()));
    // And no sysfs mount was left behind in the caller's mount namespace.
    CHECK(sysfs_mounts() == mounts_before);

    // A failure inside is passed on to the caller.
    CHECK_THROWS_AS(netns::with_netns_sysfs(hp.pod_ns, [](const netns::Sysfs&) { throw std::runtime_error("x"); }),
                    std::runtime_error);
}
