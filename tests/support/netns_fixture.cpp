#include "support/netns_fixture.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <stdexcept>

#include "support/process.hpp"

namespace rdmanet::test {
namespace {

// IFNAMSIZ (16) includes the terminating NUL.
constexpr std::size_t kMaxIfnameLen = 15;

std::atomic<unsigned> g_counter{0};

std::string base36(unsigned long value) {
    static constexpr char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    std::string out;
    do {
        out.insert(out.begin(), digits[value % 36]);
        value /= 36;
    } while (value != 0);
    return out;
}

std::string joined(const std::vector<std::string>& argv) {
    std::string s;
    for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
    return s;
}

// `ip [-n ns] link del dev <name>`, failures ignored: used only by destructors.
void delete_link_quietly(const ScopedNetns* ns, const std::string& name) {
    std::vector<std::string> argv{"ip"};
    if (ns) argv.insert(argv.end(), {"-n", ns->name()});
    argv.insert(argv.end(), {"link", "del", "dev", name});
    (void)run_command(argv);
}

// Namespaces named by ScopedNetns for a test process that no longer exists: left behind by a
// crash or an abort (no destructors ran). Removed once per process before the first new one,
// which also keeps a recycled pid from colliding with them.
void sweep_orphans() {
    DIR* dir = ::opendir("/run/netns");
    if (!dir) return;
    std::vector<std::string> orphans;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string name = entry->d_name;
        if (name.rfind("rdmt-", 0) != 0) continue;
        const std::size_t end = name.find('-', 5);
        if (end == std::string::npos || end == 5) continue;
        const std::string pid_text = name.substr(5, end - 5);
        if (pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
        const long pid = std::stol(pid_text);
        if (pid <= 0 || pid == ::getpid()) continue;
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) orphans.push_back(name);
    }
    ::closedir(dir);
    for (const auto& name : orphans) (void)run_command({"ip", "netns", "del", name});
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv) {
    ProcessResult r = run_process(argv);
    return CommandResult{r.exit_code, r.out + r.err};
}

std::string run_command_checked(const std::vector<std::string>& argv) {
    CommandResult r = run_command(argv);
    if (r.exit_code != 0)
        throw std::runtime_error("command failed (exit " + std::to_string(r.exit_code) + "): " + joined(argv) + ": " +
                                 r.output);
    return r.output;
}

std::string unique_name(std::string_view prefix) {
    const std::string suffix = base36(static_cast<unsigned long>(::getpid())) + "-" + base36(g_counter.fetch_add(1));
    const std::size_t room = suffix.size() < kMaxIfnameLen ? kMaxIfnameLen - suffix.size() : 0;
    return std::string(prefix.substr(0, room)) + suffix;
}

ScopedNetns::ScopedNetns(std::string_view tag)
    : name_("rdmt-" + std::to_string(::getpid()) + "-" + std::to_string(g_counter.fetch_add(1)) + "-" +
            std::string(tag)) {
    static std::once_flag swept;
    std::call_once(swept, sweep_orphans);
    run_command_checked({"ip", "netns", "add", name_});
}

ScopedNetns::~ScopedNetns() { (void)run_command({"ip", "netns", "del", name_}); }

std::string ScopedNetns::ip(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"ip", "-n", name_};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command_checked(argv);
}

ScopedVeth::ScopedVeth(const ScopedNetns* ns_a, const ScopedNetns* ns_b, std::string_view tag)
    : name_a_(unique_name(std::string(tag) + "a")),
      name_b_(unique_name(std::string(tag) + "b")),
      ns_a_(ns_a),
      ns_b_(ns_b) {
    // Both ends are created where they belong in one RTM_NEWLINK (IFLA_NET_NS_FD on each side).
    std::vector<std::string> argv{"ip", "link", "add", "name", name_a_};
    if (ns_a_) argv.insert(argv.end(), {"netns", ns_a_->name()});
    argv.insert(argv.end(), {"type", "veth", "peer", "name", name_b_});
    if (ns_b_) argv.insert(argv.end(), {"netns", ns_b_->name()});
    run_command_checked(argv);
}

ScopedVeth::~ScopedVeth() {
    // Deleting either end deletes the pair; a test may have moved or deleted ends, so try each
    // end where it was created and in the test program's own namespace. Names are unique, so a
    // miss can only fail, never hit somebody else's link.
    delete_link_quietly(ns_a_, name_a_);
    delete_link_quietly(ns_b_, name_b_);
    if (ns_a_) delete_link_quietly(nullptr, name_a_);
    if (ns_b_) delete_link_quietly(nullptr, name_b_);
}

}  // namespace rdmanet::test
