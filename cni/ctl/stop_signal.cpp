// SIGTERM between rounds: see stop_signal.hpp.
#include "rdmanet/cni/ctl/stop_signal.hpp"

#include <signal.h>

#include <cerrno>
#include <ctime>

namespace rdmanet::cni {

namespace {
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

StopSignal::~StopSignal() {
    pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr);
}

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

}  // namespace rdmanet::cni
