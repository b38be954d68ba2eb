#pragma once
// RAII helpers for tests that need real network namespaces and veth pairs. They drive the `ip`
// tool (tests may shell out; the product must not) and clean up in their destructors, so a
// failing REQUIRE never leaves a namespace or link behind. Names carry the test process's pid so
// that test programs running at the same time on one machine never collide.
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/netns/namespace.hpp"

namespace rdmanet::test {

struct CommandResult {
    int exit_code = -1;  // exit status; 128 + signal when killed; 127 when it could not be run
    std::string output;  // stdout followed by stderr
};

// fork/execvp of argv (no shell), stdout and stderr captured, bounded in time (60 s).
CommandResult run_command(const std::vector<std::string>& argv);
// As run_command, but throws std::runtime_error (with the output) on a non-zero exit.
std::string run_command_checked(const std::vector<std::string>& argv);

// A name unique on this machine among running test programs, at most 15 characters
// (IFNAMSIZ - 1) so it is valid as an interface name: the prefix (truncated when needed),
// the pid and a per-process counter in base 36.
std::string unique_name(std::string_view prefix);

// A named network namespace `rdmt-<pid>-<counter>-<tag>` (`ip netns add`), deleted on
// destruction (`ip netns del`; virtual links inside it are destroyed with it). The first one a
// process creates also deletes `rdmt-<pid>-*` namespaces whose pid is gone (crashed runs).
class ScopedNetns {
public:
    explicit ScopedNetns(std::string_view tag = "t");
    ~ScopedNetns();
    ScopedNetns(const ScopedNetns&) = delete;
    ScopedNetns& operator=(const ScopedNetns&) = delete;

    const std::string& name() const { return name_; }
    std::string path() const { return "/run/netns/" + name_; }
    // A fresh handle on the namespace (for NetnsGuard, IFLA_NET_NS_FD ...).
    netns::NetNamespace open() const { return netns::NetNamespace::open(path()); }
    // Runs `ip -n <name> args...` and returns its output; throws on failure.
    std::string ip(const std::vector<std::string>& args) const;

private:
    std::string name_;
};

// A veth pair with unique names. Each end is created directly in its namespace (nullptr = the
// namespace of the test program, normally the host), so no host-side name is ever visible
// unless asked for. The destructor deletes the pair wherever its ends still are; it does not
// fail when the namespaces or the links are already gone.
class ScopedVeth {
public:
    explicit ScopedVeth(const ScopedNetns* ns_a = nullptr, const ScopedNetns* ns_b = nullptr,
                        std::string_view tag = "ve");
    ~ScopedVeth();
    ScopedVeth(const ScopedVeth&) = delete;
    ScopedVeth& operator=(const ScopedVeth&) = delete;

    const std::string& name_a() const { return name_a_; }
    const std::string& name_b() const { return name_b_; }

private:
    std::string name_a_, name_b_;
    const ScopedNetns* ns_a_;
    const ScopedNetns* ns_b_;
};

}  // namespace rdmanet::test
