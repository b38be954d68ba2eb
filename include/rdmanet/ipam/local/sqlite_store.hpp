#pragma once
// The local (single-node) datastore: one SQLite database, <data_dir>/ipam.db, shared by every
// network on the node.
//
// Why one file for the directory rather than one per network: pools are keyed by (network_name,
// CIDR), which two CNI networks can share, and overlapping-range reservations span pools; both need
// one transaction over several pools. Write transactions are tens of microseconds, so one write
// lock for the node is not a bottleneck.
//
// Engine settings and why:
//  - WAL journal, synchronous=NORMAL: a process killed at any instruction leaves the database at
//    its last commit (no torn pool, no lost committed allocation); a power loss may forget the last
//    commits, but then every pod on the node is restarted too and re-ADDs.
//  - Every write is one BEGIN IMMEDIATE transaction: the write lock is taken before reading, so
//    the decision and its write see the same state; waiting is bounded by the busy timeout, after
//    which IpamError(try_again) is thrown.
//  - Offsets are 16-byte big-endian BLOBs, so 128-bit values compare numerically in indexes.
//  - Taken offsets are kept as runs of consecutive values (runs.hpp) in an indexed table, so
//    finding the lowest free offset reads O(1) rows however full the pool is. The insert of an
//    offset into its pool's run set, in the allocation's transaction, refuses an offset already
//    taken and aborts the transaction: that, and UNIQUE(pool, podref, ifname), make a double
//    hand-out impossible whatever the allocator decides. (Stores created before schema version 2
//    also have PRIMARY KEY(pool, offset); see sqlite_store.cpp.) Overlap reservations
//    (enable_overlapping_ranges) are a run set per (network_name, family) over address values,
//    enforced the same way.
//  - An ADD modifies three b-tree leaves, a DEL the same three (four in a schema-1 store); see the
//    schema comment for why that number matters (it is most of the cost).
//  - Connections use SQLite's default (unix) VFS. A VFS that wrote a transaction's WAL frames in
//    one pwrite instead of two per frame saved no measurable CPU of a whole ADD+DEL process
//    (docs/benchmarks.md, Home-grown parts) and was removed.
//  - The directory is created 0700, the database file 0600 (SQLite gives -wal/-shm the same mode).
//
// One SqliteStore is one connection: use it from one thread, and open it after fork() (a child
// must never use its parent's connection). Any number of processes may open the same directory.
// release() and gc() act on every pool of the node (see store.hpp): a DEL of (container id, ifname)
// frees what that attachment holds even if the configured ranges changed since its ADD.
#include <chrono>
#include <memory>
#include <string>

#include "rdmanet/ipam/core/store.hpp"

namespace rdmanet::ipam {

class SqliteStore final : public Store {
public:
    static constexpr const char* kFileName = "ipam.db";

    // Creates the directory and the schema when missing. Throws IpamError(io_failure).
    explicit SqliteStore(const std::string& data_dir,
                         std::chrono::milliseconds busy_timeout = std::chrono::seconds(10));
    ~SqliteStore() override;
    SqliteStore(const SqliteStore&) = delete;
    SqliteStore& operator=(const SqliteStore&) = delete;

    Allocation allocate(const AllocateRequest& request) override;
    std::vector<Allocation> release(std::span<const PoolKey> pools, const AttachmentId& attachment) override;
    std::optional<Allocation> find(const PoolKey& pool, std::string_view podref, std::string_view ifname) override;
    std::vector<PoolKey> pools() override;
    PoolDump dump(const PoolKey& pool) override;
    std::vector<Allocation> gc(std::string_view network, std::span<const PoolKey> pools,
                               std::span<const AttachmentId> valid) override;

    // Adds every allocation of `dump` in one transaction, recorded as made by CNI network
    // `network` (migration from a whereabouts IPPool; benchmark prefill). Overlap reservations are
    // not created. Throws address_in_use if an offset is already taken.
    void import_pool(const PoolDump& dump, std::string_view network);

    // Cross-checks the run tables against the allocations and their reservations; returns one line per
    // inconsistency (empty = consistent). O(n): for tests and fsck-like tooling.
    std::vector<std::string> verify();

    const std::string& path() const;

private:
    Allocation allocate_once(const AllocateRequest& request);
    void import_once(const PoolDump& dump, std::string_view network);

    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace rdmanet::ipam
