#include "support/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

extern char** environ;

namespace rdmanet::test {
namespace {

[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

// Owns one file descriptor; closing early is how EOF is signalled to the child.
class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }
    int get() const { return fd_; }
    void reset(int fd = -1) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_;
};

struct Pipe {
    Fd read, write;
    Pipe() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
        read.reset(fds[0]);
        write.reset(fds[1]);
    }
};

// Writing to a child that exited without reading stdin must be an EPIPE, not a SIGPIPE that
// kills the test program; the child gets the default disposition back before exec.
void ignore_sigpipe_once() {
    static const bool done = [] {
        ::signal(SIGPIPE, SIG_IGN);
        return true;
    }();
    (void)done;
}

void set_nonblocking(int fd) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) throw_errno("fcntl");
}

// Only async-signal-safe calls between fork and exec: everything is prepared beforehand.
[[noreturn]] void exec_child(Pipe& in, Pipe& out, Pipe& err, Pipe& exec_status, char* const* argv, char* const* envp) {
    ::setpgid(0, 0);
    ::signal(SIGPIPE, SIG_DFL);
    if (::dup2(in.read.get(), STDIN_FILENO) < 0 || ::dup2(out.write.get(), STDOUT_FILENO) < 0 ||
        ::dup2(err.write.get(), STDERR_FILENO) < 0) {
        int e = errno;
        (void)!::write(exec_status.write.get(), &e, sizeof e);
        ::_exit(127);
    }
    ::execvpe(argv[0], argv, envp);
    int e = errno;
    (void)!::write(exec_status.write.get(), &e, sizeof e);
    ::_exit(127);
}

int decode_status(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

ProcessResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                  const std::string& stdin_data, std::chrono::milliseconds timeout) {
    if (argv.empty()) throw std::invalid_argument("run_process: empty argv");
    ignore_sigpipe_once();

    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> cenv;
    for (auto& s : env_strings) cenv.push_back(s.data());
    cenv.push_back(nullptr);

    Pipe in, out, err, exec_status;
    pid_t pid = ::fork();
    if (pid < 0) throw_errno("fork");
    if (pid == 0) exec_child(in, out, err, exec_status, cargv.data(), cenv.data());
    // Also from the parent, so a kill on timeout cannot race with the child's own setpgid.
    ::setpgid(pid, pid);

    in.read.reset();
    out.write.reset();
    err.write.reset();
    exec_status.write.reset();

    ProcessResult result;
    int exec_errno = 0;
    if (::read(exec_status.read.get(), &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        result.exit_code = 127;
        result.err = "run_process: cannot execute " + argv[0] + ": " + std::strerror(exec_errno);
        return result;
    }

    if (stdin_data.empty())
        in.write.reset();
    else
        set_nonblocking(in.write.get());
    std::size_t written = 0;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char buf[65536];

    while (out.read.get() >= 0 || err.read.get() >= 0 || in.write.get() >= 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            result.timed_out = true;
            ::kill(-pid, SIGKILL);
            break;
        }
        pollfd fds[3] = {{out.read.get(), POLLIN, 0}, {err.read.get(), POLLIN, 0}, {in.write.get(), POLLOUT, 0}};
        int n = ::poll(fds, 3, static_cast<int>(left.count()));
        if (n < 0) {
            if (errno == EINTR) continue;
            throw_errno("poll");
        }
        Fd* readers[2] = {&out.read, &err.read};
        std::string* sinks[2] = {&result.out, &result.err};
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
            if (r > 0)
                sinks[i]->append(buf, static_cast<std::size_t>(r));
            else if (r == 0 || (errno != EINTR && errno != EAGAIN))
                readers[i]->reset();
        }
        if (fds[2].fd >= 0 && fds[2].revents != 0) {
            ssize_t w = ::write(in.write.get(), stdin_data.data() + written, stdin_data.size() - written);
            if (w > 0) written += static_cast<std::size_t>(w);
            // EPIPE/POLLERR: the child does not read stdin (VERSION, say); that is its business.
            if ((w < 0 && errno != EINTR && errno != EAGAIN) || written == stdin_data.size()) in.write.reset();
        }
    }

    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_code = decode_status(status);
    if (result.timed_out) result.err += "\n[run_process: killed after " + std::to_string(timeout.count()) + " ms]";
    return result;
}

}  // namespace

std::map<std::string, std::string> current_environment() {
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
        std::string entry(*e);
        auto eq = entry.find('=');
        if (eq == std::string::npos) continue;
        env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    return env;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env,
                          const std::string& stdin_data, std::chrono::milliseconds timeout) {
    auto env = current_environment();
    for (const auto& [k, v] : extra_env) env[k] = v;
    return run(argv, env, stdin_data, timeout);
}

ProcessResult run_process_exact_env(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                                    const std::string& stdin_data, std::chrono::milliseconds timeout) {
    return run(argv, env, stdin_data, timeout);
}

}  // namespace rdmanet::test
