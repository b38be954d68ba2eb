// SIGTERM between rounds: see stop_signal.hpp.
#include "rdmanet/cni/node/stop_signal.hpp"

#include <signal.h>

#include <cerrno>
#include <ctime>

#include <unistd.h>

namespace rdmanet::cni::node {

namespace {
// What the handler writes: the only state a signal handler can reach is static.
const char* g_stop_message = "";

extern "C" void exit_now(int) {
    // Only async-signal-safe calls: write(2) and _exit(2).
    const char* m = g_stop_message;
    std::size_t n = 0;
    while (m[n]) ++n;
    [[maybe_unused]] const ssize_t w = ::write(2, m, n);
    ::_exit(0);
}

sigset_t stop_set() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGINT);
    return s;
}
}  // namespace

StopSignal::StopSignal() {
    const sigset_t s = stop_set();
    pthread_sigmask(SIG_BLOCK, &s, &saved_mask_);
}

StopSignal::~StopSignal() { pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr); }

bool StopSignal::wait(std::chrono::milliseconds period) {
    if (stopped_) return true;
    const sigset_t s = stop_set();
    const auto end = std::chrono::steady_clock::now() + period;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(end - std::chrono::steady_clock::now());
        if (left.count() < 0) left = std::chrono::nanoseconds(0);
        timespec ts{static_cast<time_t>(left.count() / 1'000'000'000), static_cast<long>(left.count() % 1'000'000'000)};
        const int sig = sigtimedwait(&s, nullptr, &ts);
        if (sig == SIGTERM || sig == SIGINT) return stopped_ = true;
        if (sig < 0 && errno == EAGAIN) return false;
        // EINTR (another signal's handler ran): keep waiting for the rest of the period.
    }
}

bool StopSignal::pending() { return wait(std::chrono::milliseconds(0)); }

}  // namespace rdmanet::cni::node

namespace rdmanet::cni::node {

void exit_on_stop_signal(const char* message) {
    g_stop_message = message;
    struct sigaction sa {};
    sa.sa_handler = exit_now;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGTERM, SIGINT}) {
        sigaction(sig, &sa, nullptr);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    }
}

}  // namespace rdmanet::cni::node
