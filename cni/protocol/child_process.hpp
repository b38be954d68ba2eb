#pragma once
// Runs a program with a given environment and stdin, captures stdout and stderr, and kills it
// when it outlives its deadline. No shell, no inherited descriptors beyond 0-2.
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace rdmanet::cni {

struct ChildSpec {
    std::string path;              // executable, used as argv[0] too
    std::vector<std::string> env;  // "NAME=value" entries, the child's whole environment
    std::string input;             // written to the child's stdin, which is then closed
    std::chrono::milliseconds timeout{0};
    std::size_t max_stdout = 4 << 20;  // bytes kept; the rest is read and dropped
    std::size_t max_stderr = 64 << 10;
};

struct ChildOutcome {
    bool timed_out = false;  // killed with SIGKILL at the deadline
    bool exited = false;     // terminated normally (then exit_code is valid)
    int exit_code = -1;
    int signal = 0;  // the signal that ended it, when it did not exit
    std::string out, err;
    bool out_truncated = false;
    bool err_truncated = false;
    bool succeeded() const { return exited && exit_code == 0 && !timed_out; }
    std::string describe_end() const;  // "exit status 3", "killed by signal 9", ...
};

// Throws std::system_error when the program cannot be started (fork/exec/pipe failures). The
// child is always reaped before this returns or throws.
ChildOutcome run_child(const ChildSpec& spec);

}  // namespace rdmanet::cni
