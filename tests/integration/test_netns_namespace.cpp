// Namespace handles, probe_netns and NetnsGuard on the real kernel.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <future>
#include <stdexcept>
#include <thread>

#include "netns_helpers.hpp"

using namespace rdmanet::netns;
using rdmanet::test::errno_of;
using rdmanet::test::rtnl_in;
using rdmanet::test::ScopedNetns;
using rdmanet::test::unique_name;

namespace {

// A regular file in a fresh temporary directory, removed with it.
struct TempFile {
    std::string dir, path;
    TempFile() {
        char tmpl[] = "/tmp/rdmt-ns-XXXXXX";
        if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
        dir = tmpl;
        path = dir + "/netns-file";
        const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0) throw std::runtime_error("create " + path);
        ::close(fd);
    }
    ~TempFile() {
        ::unlink(path.c_str());
        ::rmdir(dir.c_str());
    }
};

}  // namespace

TEST_CASE("probe_netns tells live namespaces from missing paths and other files", "[netns][namespace]") {
    std::string gone_path;
    {
        ScopedNetns ns("probe");
        gone_path = ns.path();
        CHECK(probe_netns(ns.path()) == NetnsStatus::ok);
    }
    // `ip netns del` unmounts and unlinks the file.
    CHECK(probe_netns(gone_path) == NetnsStatus::missing);
    CHECK(probe_netns("/run/netns/" + unique_name("none")) == NetnsStatus::missing);
    CHECK(probe_netns("/nonexistent-dir/" + unique_name("x") + "/net") == NetnsStatus::missing);
    CHECK(probe_netns("") == NetnsStatus::missing);
    CHECK(probe_netns("/proc/self/ns/net") == NetnsStatus::ok);
    CHECK(probe_netns("/proc/thread-self/ns/net") == NetnsStatus::ok);

    TempFile file;
    CHECK(probe_netns(file.path) == NetnsStatus::not_nsfs);  // what a dead bind mount leaves
    CHECK(probe_netns(file.dir) == NetnsStatus::not_nsfs);
    // nsfs, but a mount namespace: not something to setns(CLONE_NEWNET) into.
    CHECK(probe_netns("/proc/self/ns/mnt") == NetnsStatus::not_nsfs);
}

TEST_CASE("NetNamespace::open checks that the file is a network namespace", "[netns][namespace]") {
    ScopedNetns ns("open");
    NetNamespace handle = NetNamespace::open(ns.path());
    CHECK(handle.fd() >= 0);
    CHECK(handle.path() == ns.path());
    // O_CLOEXEC: a plugin's exec'd IPAM must not inherit namespace handles.
    CHECK((::fcntl(handle.fd(), F_GETFD) & FD_CLOEXEC) != 0);

    CHECK(errno_of([&] { NetNamespace::open("/run/netns/" + unique_name("none")); }) == ENOENT);
    TempFile file;
    CHECK(errno_of([&] { NetNamespace::open(file.path); }) == EINVAL);
    CHECK(errno_of([&] { NetNamespace::open("/proc/self/ns/mnt"); }) == EINVAL);
    try {
        NetNamespace::open(file.path);
        FAIL("no exception");
    } catch (const KernelError& e) {
        CHECK_THAT(e.what(), Catch::Contains(file.path));
    }
}

TEST_CASE("NetNamespace::same_as compares namespaces, not paths or descriptors", "[netns][namespace]") {
    ScopedNetns a("same"), b("other");
    NetNamespace a1 = NetNamespace::open(a.path());
    NetNamespace a2 = NetNamespace::open(a.path());
    NetNamespace b1 = NetNamespace::open(b.path());
    CHECK(a1.same_as(a2));
    CHECK(a2.same_as(a1));
    CHECK_FALSE(a1.same_as(b1));
    NetNamespace here = NetNamespace::current();
    CHECK(here.same_as(NetNamespace::open("/proc/self/ns/net")));
    CHECK_FALSE(here.same_as(a1));
    CHECK_THAT(here.path(), Catch::Contains("/task/"));
}

TEST_CASE("NetnsGuard enters and always returns", "[netns][namespace]") {
    ScopedNetns ns("guard");
    const NetNamespace home = NetNamespace::current();
    const NetNamespace target = ns.open();

    SECTION("on scope exit") {
        {
            NetnsGuard guard(target);
            CHECK(NetNamespace::current().same_as(target));
            CHECK_FALSE(NetNamespace::current().same_as(home));
        }
        CHECK(NetNamespace::current().same_as(home));
    }
    SECTION("when an exception leaves the scope") {
        try {
            NetnsGuard guard(target);
            throw std::runtime_error("boom");
        } catch (const std::runtime_error&) {
            CHECK(NetNamespace::current().same_as(home));
        }
        CHECK(NetNamespace::current().same_as(home));
    }
    SECTION("nested guards unwind in order") {
        ScopedNetns inner("inner");
        const NetNamespace inner_ns = inner.open();
        {
            NetnsGuard outer_guard(target);
            {
                NetnsGuard inner_guard(inner_ns);
                CHECK(NetNamespace::current().same_as(inner_ns));
            }
            CHECK(NetNamespace::current().same_as(target));
        }
        CHECK(NetNamespace::current().same_as(home));
    }
    SECTION("in_netns returns the function's result and rethrows its exceptions") {
        auto only_lo = in_netns(target, [] {
            Rtnl rtnl;
            return rtnl.links();
        });
        REQUIRE(only_lo.size() == 1);
        CHECK(only_lo[0].name == "lo");
        CHECK_THROWS_AS(in_netns(target, []() -> int { throw std::logic_error("inside"); }), std::logic_error);
        CHECK(NetNamespace::current().same_as(home));
    }
    SECTION("only the calling thread moves") {
        std::promise<void> entered, release;
        std::thread worker([&] {
            NetnsGuard guard(target);
            entered.set_value();
            release.get_future().wait();
        });
        entered.get_future().wait();
        CHECK(NetNamespace::current().same_as(home));
        release.set_value();
        worker.join();
    }
}

TEST_CASE("An Rtnl stays bound to the namespace it was created in", "[netns][namespace]") {
    ScopedNetns ns("bound");
    auto rtnl = rtnl_in(ns);
    ns.ip({"link", "add", "br0", "type", "bridge"});
    // The thread is back home, yet the socket still sees the test namespace.
    CHECK(rtnl->link_by_name("br0"));
    CHECK(rtnl->links().size() == 2);
}
