#pragma once
// Running a program the way a container runtime runs a CNI plugin: fork/exec without a shell,
// stdin fed from a string, stdout and stderr captured separately, bounded in time.
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace rdmanet::test {

struct ProcessResult {
    int exit_code = -1;  // exit status; 128 + signal when killed by a signal; 127 if exec failed
    std::string out, err;
    bool timed_out = false;  // killed (with its process group) because the deadline passed
};

// Runs argv[0] (looked up in PATH) with the current environment plus `extra_env` (which
// overrides). The child gets its own process group so that a timeout also kills whatever it
// spawned (an IPAM plugin, say). Throws std::system_error only when the harness itself fails
// (pipe/fork); a program that cannot be executed is reported as exit code 127.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& extra_env = {}, const std::string& stdin_data = "",
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

// As run_process, but the child's environment is exactly `env` (nothing inherited): for tests
// that must control which CNI_* variables are absent.
ProcessResult run_process_exact_env(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                                    const std::string& stdin_data = "",
                                    std::chrono::milliseconds timeout = std::chrono::seconds(60));

// The current process environment as a map (later entries of duplicates win, like getenv).
std::map<std::string, std::string> current_environment();

}  // namespace rdmanet::test
