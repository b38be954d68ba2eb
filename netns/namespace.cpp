// Network namespace handles (nsfs files) and the guard that enters one for the calling thread.
#include "rdmanet/netns/namespace.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "rdmanet/netns/error.hpp"

namespace rdmanet::netns {
namespace {

// Per thread: setns() changes the calling thread only, so "current" must be this thread's.
constexpr const char* kThreadNetns = "/proc/thread-self/ns/net";

// An nsfs file can be any namespace type (/proc/<pid>/ns/mnt, say). NS_GET_NSTYPE (Linux 4.11)
// tells; when it cannot be asked the file is taken at its word. "Cannot be asked" is ENOTTY from
// kernels without the ioctl, and ENOSYS from QEMU's user-mode emulator before version 8 (Debian
// 12's qemu-user 7.2 answers every ioctl it does not translate with ENOSYS), which runs this
// binary for other architectures' tests; a kernel never answers an ioctl with ENOSYS.
bool is_net_namespace(int fd) {
    const int type = ::ioctl(fd, NS_GET_NSTYPE);
    return type == CLONE_NEWNET || (type < 0 && (errno == ENOTTY || errno == ENOSYS));
}

}  // namespace

NetnsStatus probe_netns(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return NetnsStatus::missing;
    // A netns file outlives its namespace only as a plain file: after `ip netns del` with a
    // lazy unmount, or a bind mount that a reboot dropped. Only nsfs holds a live namespace.
    struct statfs fs {};
    if (::statfs(path.c_str(), &fs) != 0) return NetnsStatus::missing;
    if (static_cast<unsigned long>(fs.f_type) != NSFS_MAGIC) return NetnsStatus::not_nsfs;
    base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return errno == ENOENT ? NetnsStatus::missing : NetnsStatus::not_nsfs;
    return is_net_namespace(fd.get()) ? NetnsStatus::ok : NetnsStatus::not_nsfs;
}

NetNamespace NetNamespace::open(const std::string& path) {
    base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw KernelError(errno, "open netns " + path);
    struct statfs fs {};
    if (::fstatfs(fd.get(), &fs) != 0) throw KernelError(errno, "statfs netns " + path);
    if (static_cast<unsigned long>(fs.f_type) != NSFS_MAGIC)
        throw KernelError(EINVAL, "open netns " + path + ": not an nsfs file");
    if (!is_net_namespace(fd.get())) throw KernelError(EINVAL, "open netns " + path + ": not a network namespace");
    return NetNamespace(std::move(fd), path);
}

NetNamespace NetNamespace::current() {
    base::UniqueFd fd(::open(kThreadNetns, O_RDONLY | O_CLOEXEC));
    if (!fd) throw KernelError(errno, std::string("open ") + kThreadNetns);
    // /proc/thread-self means something else in every thread: name the thread for messages.
    const std::string path =
        "/proc/" + std::to_string(::getpid()) + "/task/" + std::to_string(::syscall(SYS_gettid)) + "/ns/net";
    return NetNamespace(std::move(fd), path);
}

bool NetNamespace::same_as(const NetNamespace& other) const {
    struct stat a {
    }, b{};
    if (::fstat(fd(), &a) != 0 || ::fstat(other.fd(), &b) != 0) return false;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

NetnsGuard::NetnsGuard(const NetNamespace& target) : origin_(NetNamespace::current()) {
    if (::setns(target.fd(), CLONE_NEWNET) != 0) throw KernelError(errno, "enter netns " + target.path());
}

NetnsGuard::~NetnsGuard() {
    if (::setns(origin_.fd(), CLONE_NEWNET) == 0) return;
    // Going on in the wrong namespace would configure the wrong interfaces. No logger here
    // (netns depends on nothing of ours): stderr is never the CNI result.
    std::fprintf(stderr, "rdmanet: fatal: cannot return to netns %s: %s\n", origin_.path().c_str(),
                 std::strerror(errno));
    std::terminate();
}

}  // namespace rdmanet::netns
