#include "rdmanet/cni/pod/netns_lock.hpp"

#include <cerrno>
#include <cstring>
#include <sys/file.h>
#include <thread>

#include "rdmanet/cni/protocol/error.hpp"

namespace rdmanet::cni {

NetnsLock::NetnsLock(const netns::NetNamespace& ns, std::chrono::milliseconds bound) : fd_(ns.fd()) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    for (;;) {
        if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
        if (errno != EWOULDBLOCK && errno != EINTR)
            throw Error(ErrorCode::kernel_failure, "lock pod netns " + ns.path() + ": " + std::strerror(errno));
        if (std::chrono::steady_clock::now() >= deadline)
            throw Error(ErrorCode::try_again, "pod netns " + ns.path() + " stays locked by another attachment's ADD",
                        "another ADD into the same pod is still setting up its routing; try again");
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

NetnsLock::~NetnsLock() { ::flock(fd_, LOCK_UN); }

}  // namespace rdmanet::cni
