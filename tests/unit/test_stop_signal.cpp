// StopSignal: SIGTERM/SIGINT end the wait between rounds of the DaemonSet's loops, at once.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>

#include "rdmanet/cni/node/stop_signal.hpp"

using rdmanet::cni::node::StopSignal;
using namespace std::chrono_literals;

TEST_CASE("stop signal: the wait runs its period when nothing arrives", "[ctl][signal]") {
    StopSignal stop;
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(stop.wait(30ms));
    CHECK(std::chrono::steady_clock::now() - start >= 30ms);
    CHECK_FALSE(stop.pending());
}

TEST_CASE("stop signal: SIGTERM sent during a round ends the next wait at once, and stays seen", "[ctl][signal]") {
    StopSignal stop;
    ::kill(::getpid(), SIGTERM);  // blocked: pending, not fatal
    const auto start = std::chrono::steady_clock::now();
    CHECK(stop.wait(10s));
    CHECK(std::chrono::steady_clock::now() - start < 1s);
    CHECK(stop.wait(10s));
    CHECK(stop.pending());
}

TEST_CASE("stop signal: SIGINT too, and the mask is restored afterwards", "[ctl][signal]") {
    sigset_t before;
    pthread_sigmask(SIG_SETMASK, nullptr, &before);
    {
        StopSignal stop;
        sigset_t during;
        pthread_sigmask(SIG_SETMASK, nullptr, &during);
        CHECK(sigismember(&during, SIGTERM) == 1);
        ::kill(::getpid(), SIGINT);
        CHECK(stop.wait(10s));
    }
    sigset_t after;
    pthread_sigmask(SIG_SETMASK, nullptr, &after);
    CHECK(sigismember(&after, SIGTERM) == sigismember(&before, SIGTERM));
    CHECK(sigismember(&after, SIGINT) == sigismember(&before, SIGINT));
}
