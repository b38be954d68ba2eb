#include "rdmanet/cni/pod/netns_lock.hpp"

#include <cerrno>
#include <cstring>
#include <sys/file.h>

#include "rdmanet/base/flock.hpp"
#include "rdmanet/cni/protocol/error.hpp"

namespace rdmanet::cni {

NetnsLock::NetnsLock(const netns::NetNamespace& ns, std::chrono::milliseconds bound) : fd_(ns.fd()) {
    const int err = base::flock_exclusive_within(fd_, bound, std::chrono::milliseconds(2));
    if (err == ETIMEDOUT)
        throw Error(ErrorCode::try_again, "pod netns " + ns.path() + " stays locked by another attachment's ADD",
                    "another ADD into the same pod is still setting up its routing; try again");
    if (err != 0) throw Error(ErrorCode::kernel_failure, "lock pod netns " + ns.path() + ": " + std::strerror(err));
}

NetnsLock::~NetnsLock() { ::flock(fd_, LOCK_UN); }

}  // namespace rdmanet::cni
