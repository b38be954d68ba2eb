#pragma once
// How the DaemonSet's long-running rdmanetctl loops (install --watch, reconcile --interval) stop:
// the kubelet sends SIGTERM to the container's PID 1 and waits the grace period before SIGKILL.
// A PID 1 with the default disposition never sees SIGTERM (the kernel drops it), so the loop
// blocks SIGTERM and SIGINT and waits for them between rounds with sigtimedwait: a round in
// progress finishes (no half-written file), the wait between rounds ends at once.
#include <signal.h>

#include <chrono>

namespace rdmanet::cni::node {

class StopSignal {
public:
    // Blocks SIGTERM and SIGINT in the calling thread (threads started later inherit it). Call
    // before starting threads. The previous mask is restored by the destructor.
    StopSignal();
    ~StopSignal();
    StopSignal(const StopSignal&) = delete;
    StopSignal& operator=(const StopSignal&) = delete;

    // Waits up to `period`; true when SIGTERM or SIGINT arrived (now or while the round ran).
    bool wait(std::chrono::milliseconds period);
    // True when one is pending, without waiting.
    bool pending();

private:
    bool stopped_ = false;
    sigset_t saved_mask_{};  // the caller's, restored at the end
};

// For a loop whose round may be abandoned at any point (it already survives SIGKILL, e.g. the
// reconciler, whose writes are single API requests): SIGTERM and SIGINT write `message` to stderr
// and end the process with exit 0 at once, even in the middle of a round waiting on the network.
// `message` must outlive the process (a string literal). Process-wide (signal dispositions).
void exit_on_stop_signal(const char* message);

}  // namespace rdmanet::cni::node
