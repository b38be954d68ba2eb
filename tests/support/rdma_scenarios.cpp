#include "rdma_scenarios.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "rdmanet/netns/error.hpp"

namespace rdmanet::test::rdma_scenarios {

using netns::KernelError;
using netns::RdmaNetnsMode;

namespace {

int errno_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const KernelError& e) {
        return e.errno_value();
    }
    return 0;
}

bool sees(netns::RdmaNetlink& nl, const std::string& name) { return nl.device_by_name(name).has_value(); }

// Leaves the mode shared whatever happens in a scenario, so the next one starts clean.
struct BackToShared {
    netns::RdmaNetlink& nl;
    ~BackToShared() {
        try {
            set_mode_when_idle(nl, RdmaNetnsMode::shared);
        } catch (...) {
        }
    }
};

}  // namespace

void set_mode_when_idle(netns::RdmaNetlink& nl, RdmaNetnsMode mode, int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    for (;;) {
        try {
            nl.set_netns_mode(mode);
            return;
        } catch (const KernelError& e) {
            if (e.errno_value() != EBUSY || std::chrono::steady_clock::now() > deadline) throw;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

void mode_read(Env& env) { CHECK(env.host.netns_mode() == RdmaNetnsMode::shared); }

void mode_set_roundtrip(Env& env) {
    BackToShared guard{env.host};
    set_mode_when_idle(env.host, RdmaNetnsMode::exclusive);
    CHECK(env.host.netns_mode() == RdmaNetnsMode::exclusive);
    env.host.set_netns_mode(RdmaNetnsMode::exclusive);  // same mode: a no-op, never EBUSY
    CHECK(env.host.netns_mode() == RdmaNetnsMode::exclusive);
    env.host.set_netns_mode(RdmaNetnsMode::shared);
    CHECK(env.host.netns_mode() == RdmaNetnsMode::shared);
}

void mode_change_busy_with_netns(Env& env) {
    BackToShared guard{env.host};
    REQUIRE(env.host.netns_mode() == RdmaNetnsMode::shared);
    {
        auto ns = env.make_netns();
        CHECK(errno_of([&] { env.host.set_netns_mode(RdmaNetnsMode::exclusive); }) == EBUSY);
        CHECK(env.host.netns_mode() == RdmaNetnsMode::shared);
        CHECK(errno_of([&] { env.host.set_netns_mode(RdmaNetnsMode::shared); }) == 0);
    }
    set_mode_when_idle(env.host, RdmaNetnsMode::exclusive);
    CHECK(env.host.netns_mode() == RdmaNetnsMode::exclusive);
}

void enumeration_and_lookup(Env& env) {
    const auto devices = env.host.devices();
    REQUIRE_FALSE(devices.empty());
    CHECK(std::count_if(devices.begin(), devices.end(), [&](const auto& d) { return d.name == env.device; }) == 1);
    for (const auto& d : devices) {
        CHECK(d.index != 0);
        CHECK_FALSE(d.name.empty());
        CHECK(std::count_if(devices.begin(), devices.end(), [&](const auto& o) { return o.index == d.index; }) == 1);
    }
    auto found = env.host.device_by_name(env.device);
    REQUIRE(found);
    CHECK(std::find(devices.begin(), devices.end(), *found) != devices.end());
    CHECK_FALSE(env.host.device_by_name("rdmanet-no-such-dev"));
}

void move_refused_in_shared_mode(Env& env) {
    REQUIRE(env.host.netns_mode() == RdmaNetnsMode::shared);
    auto ns = env.make_netns();
    auto inside = env.open_in(*ns);
    CHECK(sees(*inside, env.device));  // shared: compat devices everywhere
    auto device = env.host.device_by_name(env.device);
    REQUIRE(device);
    CHECK(errno_of([&] { env.host.move_device(device->index, ns->fd()); }) == EOPNOTSUPP);
    CHECK(sees(env.host, env.device));
}

void exclusive_isolation(Env& env) {
    BackToShared guard{env.host};
    set_mode_when_idle(env.host, RdmaNetnsMode::exclusive);
    {
        auto ns = env.make_netns();
        auto inside = env.open_in(*ns);
        CHECK(inside->devices().empty());  // a fresh namespace owns no RDMA device
        CHECK(inside->netns_mode() == RdmaNetnsMode::exclusive);
        REQUIRE(sees(env.host, env.device));
        auto device = env.host.device_by_name(env.device);
        REQUIRE(device);
        const int err = errno_of([&] { env.host.move_device(device->index, ns->fd()); });
        if (!env.device_can_move) {
            CHECK(err == EOPNOTSUPP);
            CHECK(sees(env.host, env.device));
            CHECK_FALSE(sees(*inside, env.device));
        } else {
            REQUIRE(err == 0);
            CHECK_FALSE(sees(env.host, env.device));
            auto there = inside->device_by_name(env.device);
            REQUIRE(there);
            // The host cannot address it any more; the way back is from inside.
            CHECK(errno_of([&] { env.host.move_device(device->index, env.host_netns_fd); }) == EINVAL);
            CHECK(errno_of([&] { inside->move_device(there->index, env.host_netns_fd); }) == 0);
            CHECK(sees(env.host, env.device));
            CHECK_FALSE(sees(*inside, env.device));
        }
    }
    set_mode_when_idle(env.host, RdmaNetnsMode::shared);
    CHECK(env.host.netns_mode() == RdmaNetnsMode::shared);
}

void bound_device_deleted_with_netdev(Env& env, const std::function<void()>& netdev_leaves,
                                      const std::function<void()>& netdev_returns) {
    REQUIRE(sees(env.host, env.device));
    netdev_leaves();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (sees(env.host, env.device) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK_FALSE(sees(env.host, env.device));
    auto ns = env.make_netns();
    CHECK_FALSE(sees(*env.open_in(*ns), env.device));  // gone from every view, not just moved
    netdev_returns();
    CHECK_FALSE(sees(env.host, env.device));
}

void rename_rules(Env& env) {
    const std::string renamed = "rdmanet-ren0";
    auto device = env.host.device_by_name(env.device);
    REQUIRE(device);
    struct RenameBack {
        netns::RdmaNetlink& nl;
        std::uint32_t index;
        std::string name;
        ~RenameBack() {
            try {
                nl.rename_device(index, name);
            } catch (...) {
            }
        }
    } back{env.host, device->index, env.device};
    CHECK(errno_of([&] { env.host.rename_device(device->index, env.device); }) == 0);
    CHECK(errno_of([&] { env.host.rename_device(device->index, ""); }) == EINVAL);
    REQUIRE(errno_of([&] { env.host.rename_device(device->index, renamed); }) == 0);
    CHECK(sees(env.host, renamed));
    CHECK_FALSE(sees(env.host, env.device));
    CHECK(env.host.device_by_name(renamed)->index == device->index);
    for (const auto& other : env.host.devices())
        if (other.index != device->index) {
            CHECK(errno_of([&] { env.host.rename_device(device->index, other.name); }) == EEXIST);
            break;
        }
    CHECK(errno_of([&] { env.host.rename_device(device->index, env.device); }) == 0);
    CHECK(sees(env.host, env.device));
}

void run_all(Env& env) {
    mode_read(env);
    mode_set_roundtrip(env);
    mode_change_busy_with_netns(env);
    enumeration_and_lookup(env);
    move_refused_in_shared_mode(env);
    exclusive_isolation(env);
    rename_rules(env);
}

}  // namespace rdmanet::test::rdma_scenarios
