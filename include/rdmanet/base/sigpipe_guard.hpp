#pragma once
// Blocks SIGPIPE in this thread while writing to a pipe or socket whose reader may be gone (a
// child that exited early, an API server that closed the connection: OpenSSL writes with write(2),
// not send(MSG_NOSIGNAL)), and discards a SIGPIPE those writes raised before unblocking it, so the
// write fails with EPIPE instead of killing the process.
#include <signal.h>

#include <ctime>

namespace rdmanet::base {

class SigpipeGuard {
public:
    SigpipeGuard() {
        const sigset_t pipe_only = only_sigpipe();
        sigset_t pending;
        sigpending(&pending);
        was_pending_ = sigismember(&pending, SIGPIPE) == 1;
        pthread_sigmask(SIG_BLOCK, &pipe_only, &original_);
    }
    ~SigpipeGuard() {
        sigset_t pending;
        sigpending(&pending);
        if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
            const sigset_t pipe_only = only_sigpipe();
            const timespec zero{0, 0};
            sigtimedwait(&pipe_only, nullptr, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &original_, nullptr);
    }
    SigpipeGuard(const SigpipeGuard&) = delete;
    SigpipeGuard& operator=(const SigpipeGuard&) = delete;
    const sigset_t& original_mask() const { return original_; }

private:
    static sigset_t only_sigpipe() {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGPIPE);
        return s;
    }
    sigset_t original_{};
    bool was_pending_ = false;
};

}  // namespace rdmanet::base
