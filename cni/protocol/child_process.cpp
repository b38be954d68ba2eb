#include "child_process.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <system_error>

#include "rdmanet/base/fd.hpp"
#include "rdmanet/base/sigpipe_guard.hpp"

namespace rdmanet::cni {

namespace {

using base::UniqueFd;
using Clock = std::chrono::steady_clock;

[[noreturn]] void throw_errno(int error, const char* what) {
    throw std::system_error(error, std::generic_category(), what);
}

// A close-on-exec descriptor numbered 3 or above: a posix_spawn dup2 onto its own number would
// not clear close-on-exec, which happens when the parent runs with 0-2 closed.
UniqueFd above_stdio(int fd) {
    if (fd > 2) return UniqueFd(fd);
    UniqueFd original(fd);
    int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (moved < 0) throw_errno(errno, "fcntl(F_DUPFD_CLOEXEC)");
    return UniqueFd(moved);
}

struct Pipe {
    UniqueFd read, write;
};
Pipe make_pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno(errno, "pipe2");
    Pipe p{UniqueFd(fds[0]), UniqueFd(fds[1])};
    p.read = above_stdio(p.read.release());
    p.write = above_stdio(p.write.release());
    return p;
}

void set_nonblocking(const UniqueFd& fd) {
    int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) throw_errno(errno, "fcntl(O_NONBLOCK)");
}

using base::SigpipeGuard;

pid_t spawn(const ChildSpec& spec, const Pipe& in, const Pipe& out, const Pipe& err, const sigset_t& child_mask) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in.read.get(), 0);
    posix_spawn_file_actions_adddup2(&actions, out.write.get(), 1);
    posix_spawn_file_actions_adddup2(&actions, err.write.get(), 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    // Our own descriptors are close-on-exec, but a library's may not be: a held lock file or
    // netlink socket must not outlive us in an IPAM child.
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // The child starts with the caller's mask (not ours with SIGPIPE blocked) and default
    // dispositions for the signals a runtime may have set to ignore.
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int sig : {SIGPIPE, SIGCHLD, SIGHUP, SIGINT, SIGQUIT, SIGTERM}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attr, &child_mask);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<char*> argv{const_cast<char*>(spec.path.c_str()), nullptr};
    std::vector<char*> envp;
    for (const auto& entry : spec.env) envp.push_back(const_cast<char*>(entry.c_str()));
    envp.push_back(nullptr);

    pid_t pid = -1;
    int rc = posix_spawn(&pid, spec.path.c_str(), &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw_errno(rc, "posix_spawn");
    return pid;
}

// A descriptor that becomes readable when the child exits, so the loop below sleeps in poll
// instead of ticking; invalid on kernels without pidfd (< 5.3), where we tick instead.
UniqueFd open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
    long fd = ::syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
#endif
    (void)pid;
    return UniqueFd();
}

// Appends what `fd` has to `sink` (up to `cap`, the rest dropped). Closes `fd` at EOF or error.
// Returns false when the read would block.
bool read_some(UniqueFd& fd, std::string& sink, std::size_t cap, bool& truncated) {
    char buffer[65536];
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    if (n <= 0) {
        fd.reset();
        return false;
    }
    std::size_t room = sink.size() < cap ? cap - sink.size() : 0;
    sink.append(buffer, std::min(room, static_cast<std::size_t>(n)));
    if (static_cast<std::size_t>(n) > room) truncated = true;
    return true;
}

// After the child is gone, whatever it wrote is in the pipe buffers; a descendant that keeps a
// pipe open must not keep us here, so read only what is there now (bounded).
void drain(UniqueFd& fd, std::string& sink, std::size_t cap, bool& truncated) {
    for (std::size_t rounds = 0; fd && rounds < 64; ++rounds)
        if (!read_some(fd, sink, cap, truncated)) break;
}

}  // namespace

std::string ChildOutcome::describe_end() const {
    if (timed_out) return "killed at its deadline";
    if (exited) return "exit status " + std::to_string(exit_code);
    if (signal != 0) return "killed by signal " + std::to_string(signal);
    return "end unknown";
}

ChildOutcome run_child(const ChildSpec& spec) {
    Pipe in = make_pipe(), out = make_pipe(), err = make_pipe();
    set_nonblocking(in.write);
    set_nonblocking(out.read);
    set_nonblocking(err.read);

    SigpipeGuard sigpipe;
    const pid_t pid = spawn(spec, in, out, err, sigpipe.original_mask());
    const auto deadline = Clock::now() + spec.timeout;
    // Only the child may hold these ends now, so EOF means the child (and its descendants)
    // closed them.
    in.read.reset();
    out.write.reset();
    err.write.reset();
    UniqueFd pidfd = open_pidfd(pid);

    ChildOutcome outcome;
    std::size_t written = 0;
    if (spec.input.empty()) in.write.reset();
    int status = 0;
    bool reaped = false;

    auto try_reap = [&] {
        pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            reaped = true;
        } else if (r < 0 && errno == ECHILD) {  // reaped elsewhere (SIGCHLD ignored)
            reaped = true;
            status = -1;
        }
    };

    while (true) {
        if (!reaped) try_reap();
        if (reaped) {
            drain(out.read, outcome.out, spec.max_stdout, outcome.out_truncated);
            drain(err.read, outcome.err, spec.max_stderr, outcome.err_truncated);
            break;
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            ::kill(pid, SIGKILL);
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            outcome.timed_out = true;
            return outcome;
        }

        pollfd fds[4];
        int count = 0;
        auto watch = [&](const UniqueFd& fd, short events) {
            if (fd) fds[count++] = pollfd{fd.get(), events, 0};
            return fd ? count - 1 : -1;
        };
        int in_slot = watch(in.write, POLLOUT);
        int out_slot = watch(out.read, POLLIN);
        int err_slot = watch(err.read, POLLIN);
        int pid_slot = watch(pidfd, POLLIN);
        // Rounded up, so poll never wakes just before the deadline and kills early.
        const auto remaining = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
        // Without a pidfd the child's exit is only seen by waitpid: tick.
        auto wait = pidfd ? remaining : std::min(remaining, std::chrono::milliseconds(10));
        int ready = ::poll(fds, count, static_cast<int>(std::min<long long>(wait.count(), 1 << 30)));
        if (ready < 0) {
            if (errno == EINTR) continue;
            int error = errno;
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            throw_errno(error, "poll");
        }
        if (in_slot >= 0 && fds[in_slot].revents) {
            ssize_t n = ::write(in.write.get(), spec.input.data() + written, spec.input.size() - written);
            if (n > 0) written += static_cast<std::size_t>(n);
            // EPIPE: the child stopped reading, which is its business; the rest is dropped.
            if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == spec.input.size()) in.write.reset();
        }
        if (out_slot >= 0 && fds[out_slot].revents)
            read_some(out.read, outcome.out, spec.max_stdout, outcome.out_truncated);
        if (err_slot >= 0 && fds[err_slot].revents)
            read_some(err.read, outcome.err, spec.max_stderr, outcome.err_truncated);
        (void)pid_slot;  // readable pidfd: the next turn reaps
    }

    if (status != -1 && WIFEXITED(status)) {
        outcome.exited = true;
        outcome.exit_code = WEXITSTATUS(status);
    } else if (status != -1 && WIFSIGNALED(status)) {
        outcome.signal = WTERMSIG(status);
    }
    return outcome;
}

}  // namespace rdmanet::cni
