#pragma once
// The one way the project takes an exclusive flock: bounded in time, because a plugin call (and
// anything it waits for) must never hang on a stuck holder. flock(2) has no timeout of its own,
// so it is polled with LOCK_NB until the deadline.
#include <sys/file.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace rdmanet::base {

// LOCK_EX on `fd` within `timeout`, retried every `poll`. Returns 0 once held, ETIMEDOUT when
// the deadline passed, or the errno of any other failure (EBADF, ENOLCK, ...). The lock lasts
// until the fd is closed or unlocked.
inline int flock_exclusive_within(int fd, std::chrono::milliseconds timeout, std::chrono::milliseconds poll) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
        if (errno != EWOULDBLOCK && errno != EINTR) return errno;
        if (std::chrono::steady_clock::now() >= deadline) return ETIMEDOUT;
        std::this_thread::sleep_for(poll);
    }
}

}  // namespace rdmanet::base
