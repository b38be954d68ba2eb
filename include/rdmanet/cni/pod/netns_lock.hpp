#pragma once
// An exclusive lock on one network namespace, held from the reads an ADD's pod-side plan is made
// from until the plan is applied: concurrent ADDs into the same pod (Multus may run a pod's
// attachments in parallel) then never pick the same free table, nor both add a default route to
// the main table.
//
// The lock is flock(2) on the namespace's own nsfs file: every opener of the same namespace
// (through /run/netns/x, /proc/<pid>/ns/net or a bind mount) reaches the same inode, so no lock
// file has to be created, named or cleaned up, and the lock dies with the holder's process.
#include <chrono>

#include "rdmanet/netns/namespace.hpp"

namespace rdmanet::cni {

class NetnsLock {
public:
    // Waits up to `bound` for the lock; throws Error(try_again) when another holder keeps it.
    NetnsLock(const netns::NetNamespace& ns, std::chrono::milliseconds bound);
    ~NetnsLock();
    NetnsLock(const NetnsLock&) = delete;
    NetnsLock& operator=(const NetnsLock&) = delete;

private:
    int fd_;
};

}  // namespace rdmanet::cni
