// The local datastore: see sqlite_store.hpp for the design and why.
#include "rdmanet/ipam/local/sqlite_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include "rdmanet/ipam/core/allocator.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/core/runs.hpp"
#include "sqlite.hpp"
#include "rdmanet/base/private_dir.hpp"

namespace rdmanet::ipam {

namespace {

// Schema versions (PRAGMA user_version). Both are read and written by the same statements: every
// statement below looks rows up by (pool, podref, ifname) or (container_id, ifname), which both
// layouts index, never by (pool, offset).
//   1: allocations keyed by (pool, offset), with a unique index on (pool, podref, ifname) and one
//      on (container_id, ifname). Created by earlier versions; still opened as it is.
//   2: allocations keyed by (pool, podref, ifname), with an index on (container_id, ifname).
//      Created for new databases.
// Why 2: every b-tree leaf a transaction modifies is one more WAL frame (a write, a checksum over
// the page, a wal-index entry) plus the seek and cell shuffling to change it, and that is most of
// the cost of an ADD or a DEL. Version 1 changes four leaves per ADD or DEL: the row, its two
// lookup indexes and the runs; version 2 three, because the row itself sits in the b-tree of one
// of the lookups. (pool, offset) no longer has a b-tree of its own, so its uniqueness is the runs
// table's: the insert of an offset into the pool's run set, in the same transaction as the row,
// refuses an offset that is already taken and aborts the transaction (the same way overlap
// reservations have always been enforced), and verify() cross-checks runs against rows.
constexpr int kSchemaV1 = 1;
constexpr int kSchemaV2 = 2;

// Run spaces: one per pool (offsets), one per (network_name, family) for overlap reservations
// (absolute address values, so that pools of different CIDRs share them). The runs table is small:
// both spaces of a network usually share one leaf.
//
// There is no index on `network` (GC scans, it is O(n) by nature) and no table of overlap
// reservations: the reservation space's runs hold the set, and an insert into it that finds the
// address already there aborts the transaction, which is the constraint.
constexpr const char* kSchemaCommon = R"sql(
CREATE TABLE IF NOT EXISTS pools(
    id           INTEGER PRIMARY KEY,
    network_name TEXT NOT NULL,
    range        TEXT NOT NULL,               -- normalised CIDR
    UNIQUE(network_name, range));
CREATE TABLE IF NOT EXISTS runs(
    space        TEXT NOT NULL,
    lo           BLOB NOT NULL,
    hi           BLOB NOT NULL,
    PRIMARY KEY(space, lo)) WITHOUT ROWID;
)sql";

constexpr const char* kSchemaV2Allocations = R"sql(
CREATE TABLE IF NOT EXISTS allocations(
    pool         INTEGER NOT NULL,
    podref       TEXT NOT NULL,
    ifname       TEXT NOT NULL,
    offset       BLOB NOT NULL,               -- 16-byte big-endian offset from the network address
    container_id TEXT NOT NULL,
    network      TEXT NOT NULL,               -- CNI network name, scopes GC
    reservation  TEXT,                        -- run space of the overlap reservation, NULL if none
    PRIMARY KEY(pool, podref, ifname)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS allocations_attachment ON allocations(container_id, ifname);
)sql";

std::string pool_space(std::int64_t pool_id) { return std::string("p").append(std::to_string(pool_id)); }

std::string reservation_space(std::string_view network_name, base::IpAddress::Family family) {
    return (family == base::IpAddress::Family::v4 ? "r4:" : "r6:") + std::string(network_name);
}

// runs.hpp backend over the runs table. Lives inside one transaction, and answers most calls
// from what it last read: one query fetches the run at or below x *and* the first run above x,
// which together settle floor(y) and at(y) for every y between the two. An ADD asks floor(first),
// then floor(end of that run + 1) (the search), then floor and at(offset + 1) again (the insert):
// all from one query per run space instead of four. Statements, not pages, are most of the
// CPU of a transaction once its pages are cached.
class SqlRuns {
public:
    SqlRuns(sql::Db& db, std::string space) : db_(db), space_(std::move(space)) {}

    std::optional<Interval> floor(uint128 x) {
        if (!knows(x)) read_around(x);
        return window_->below;
    }
    std::optional<Interval> at(uint128 lo) {
        if (!knows(lo)) read_around(lo);
        if (window_->below && window_->below->lo == lo) return window_->below;
        return std::nullopt;  // between below and above, no run starts at lo
    }
    void put(Interval run) {
        if (window_ && window_->below && window_->below->lo == run.lo) {
            // Known to exist: change its end in place (REPLACE would delete and re-insert the row).
            sql::Query q(db_, "UPDATE runs SET hi = ?3 WHERE space = ?1 AND lo = ?2");
            q.bind(1, space_).bind_u128(2, run.lo).bind_u128(3, run.hi).run();
            window_->below = run;  // no run starts inside it, so the window still holds
            return;
        }
        window_.reset();
        sql::Query q(db_, "INSERT OR REPLACE INTO runs(space, lo, hi) VALUES(?1, ?2, ?3)");
        q.bind(1, space_).bind_u128(2, run.lo).bind_u128(3, run.hi).run();
    }
    void invalidate() { window_.reset(); }
    void remove(uint128 lo) {
        window_.reset();
        sql::Query q(db_, "DELETE FROM runs WHERE space = ?1 AND lo = ?2");
        q.bind(1, space_).bind_u128(2, lo).run();
    }

private:
    // The runs nearest to the last x read: `below` starts at or before it, `above` is the first
    // starting after it. For every y with below.lo <= y < above.lo, floor(y) is `below` and no run
    // starts at y unless y == below.lo (missing ends are unbounded).
    struct Window {
        std::optional<Interval> below, above;
    };

    bool knows(uint128 y) const {
        return window_ && (!window_->below || y >= window_->below->lo) && (!window_->above || y < window_->above->lo);
    }

    void read_around(uint128 x) {
        sql::Query q(
            db_,
            "SELECT lo, hi FROM (SELECT lo, hi FROM runs WHERE space = ?1 AND lo <= ?2 ORDER BY lo DESC LIMIT 1) "
            "UNION ALL "
            "SELECT lo, hi FROM (SELECT lo, hi FROM runs WHERE space = ?1 AND lo > ?2 ORDER BY lo LIMIT 1)");
        q.bind(1, space_).bind_u128(2, x);
        Window w;
        while (q.step()) {
            const Interval run{q.u128(0), q.u128(1)};
            (run.lo <= x ? w.below : w.above) = run;
        }
        window_ = w;
    }

    sql::Db& db_;
    std::string space_;
    std::optional<Window> window_;
};

// The pool's own allocations, by offset.
class PoolCoverage final : public Coverage {
public:
    explicit PoolCoverage(SqlRuns& runs) : runs_(runs) {}
    std::optional<Interval> covering(uint128 x) override { return runs::covering(runs_, x); }

private:
    SqlRuns& runs_;
};

// Overlap reservations are kept by address value; seen from a pool they are shifted by its base
// and clipped to its CIDR.
class ReservationCoverage final : public Coverage {
public:
    ReservationCoverage(SqlRuns& runs, const base::IpNetwork& cidr)
        : runs_(runs), base_(cidr.address.to_u128()), top_(cidr.last().to_u128()) {}
    std::optional<Interval> covering(uint128 x) override {
        auto run = runs::covering(runs_, base_ + x);
        if (!run) return std::nullopt;
        return Interval{std::max(run->lo, base_) - base_, std::min(run->hi, top_) - base_};
    }

private:
    SqlRuns& runs_;
    uint128 base_, top_;
};

[[noreturn]] void io_error(const std::string& what, int err) {
    throw IpamError(codes::io_failure, "ipam datastore: " + what + ": " + std::strerror(err));
}

// mkdir -p; the components created here get 0700 (the data is node-private).
void make_private_dir(const std::string& dir) {
    if (const std::string problem = base::make_private_dir(dir); !problem.empty())
        throw IpamError(codes::io_failure, "ipam datastore: " + problem);
}

// SQLite creates the -wal and -shm files with the mode of the database file, so creating that
// one 0600 first keeps all three private regardless of the umask.
void make_private_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) io_error("create " + path, errno);
    ::close(fd);
}

}  // namespace

struct SqliteStore::Impl {
    sql::Db db;
    // Pools are never deleted, so a pool's id, once committed, never changes: cached per connection.
    // forget() drops both maps when a transaction that may have created a pool rolls back (its id
    // could then be reused for another pool).
    std::map<std::int64_t, PoolKey> pool_keys;  // id -> key
    std::map<PoolKey, std::int64_t> pool_ids;   // key -> id
    void forget() {
        pool_keys.clear();
        pool_ids.clear();
    }

    Impl(const std::string& path, int busy_ms) : db(path, busy_ms), busy_ms(busy_ms) {}
    int busy_ms;

    void init_schema() {
        // 1 KiB pages (SQLite's default is 4 KiB): an ADD or DEL changes 3-4 pages (see the
        // schema versions), and each is appended to the WAL with a checksum over the whole page.
        // Measured with ipam_bench at a 60k pool: 84 -> 67 us per ADD+DEL under the same load;
        // 512-byte pages made the trees deeper and were no faster. Only a new database
        // takes it (the page size of a WAL database is fixed), so older stores keep working.
        db.exec("PRAGMA page_size=1024");
        // WAL is a property of the file: set once, seen by every later connection.
        switch_to_wal();
        db.exec("PRAGMA synchronous=NORMAL");
        // Every CNI call is a short-lived process, so SQLite's default stays: the last connection
        // to close checkpoints the WAL into the database and removes it. Skipping that
        // (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE) was measured worse: the next process to open the
        // database then rebuilds the WAL index by reading every frame (1666 preads, ~7 ms CPU per
        // ADD+DEL pair against ~5 ms with the checkpoint, whose fdatasyncs are cheap).
        // Up to 16 MiB of pages (a ceiling, not an allocation): a long-lived caller keeps the
        // interior pages of big pools in memory instead of re-reading them on every call.
        db.exec("PRAGMA cache_size=-16384");
        db.exec("PRAGMA foreign_keys=OFF");
        if (const int v = user_version(); v == kSchemaV1 || v == kSchemaV2) return;
        sql::Transaction t(db, sql::Transaction::Kind::write);
        const int version = user_version();  // re-read under the write lock: another process may have won
        if (version == 0) {
            db.exec(kSchemaCommon);
            db.exec(kSchemaV2Allocations);
            db.exec("PRAGMA user_version=2");
        } else if (version != kSchemaV1 && version != kSchemaV2) {
            throw IpamError(codes::io_failure, "ipam datastore " + db.path() + ": schema version " +
                                                   std::to_string(version) + " is not supported by this rdmanet");
        }
        t.commit();
    }

    // Switching a new file to WAL takes an exclusive lock. When several processes open a brand-new
    // store at once, SQLite may answer SQLITE_BUSY without calling the busy handler, because
    // waiting could deadlock (documented for sqlite3_busy_handler); so retry within the same
    // budget. Seen under heavy load in the 16-process test as "journal_mode=WAL: database is locked".
    void switch_to_wal() {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_ms);
        for (unsigned attempt = 0;; ++attempt) {
            try {
                if (journal_mode("PRAGMA journal_mode") == "wal" || journal_mode("PRAGMA journal_mode=WAL") == "wal")
                    return;
                throw IpamError(codes::io_failure, "ipam datastore " + db.path() + ": cannot switch to WAL");
            } catch (const IpamError& e) {
                if (e.code != codes::try_again || std::chrono::steady_clock::now() >= give_up) throw;
            }
            // 1-8 ms, spread by the pid so that the contenders do not retry in step.
            ::usleep(static_cast<useconds_t>(1000 * (1 + (attempt + static_cast<unsigned>(::getpid())) % 8)));
        }
    }

    // Each statement is reset before the next runs: an unfinished one would hold a read
    // transaction, and SQLite refuses to change the journal mode inside a transaction.
    std::string journal_mode(const char* pragma) {
        sql::Query q(db, pragma);
        return q.step() ? q.text(0) : std::string();
    }

    int user_version() {
        sql::Query q(db, "PRAGMA user_version");
        q.step();
        return static_cast<int>(q.int64(0));
    }

    std::optional<std::int64_t> pool_id(const PoolKey& key) {
        if (auto it = pool_ids.find(key); it != pool_ids.end()) return it->second;
        sql::Query q(db, "SELECT id FROM pools WHERE network_name = ?1 AND range = ?2");
        q.bind(1, key.network_name).bind(2, key.range.str());
        if (!q.step()) return std::nullopt;
        const std::int64_t id = q.int64(0);
        pool_keys.emplace(id, key);
        pool_ids.emplace(key, id);
        return id;
    }

    // Callers run it in a write transaction and call forget() if that transaction rolls back.
    std::int64_t ensure_pool(const PoolKey& key) {
        if (auto id = pool_id(key)) return *id;
        sql::Query q(db, "INSERT INTO pools(network_name, range) VALUES(?1, ?2)");
        q.bind(1, key.network_name).bind(2, key.range.str()).run();
        const std::int64_t id = sqlite3_last_insert_rowid(db.get());
        pool_keys.emplace(id, key);
        pool_ids.emplace(key, id);
        return id;
    }

    const PoolKey& key_of(std::int64_t id) {
        if (auto it = pool_keys.find(id); it != pool_keys.end()) return it->second;
        sql::Query q(db, "SELECT network_name, range FROM pools WHERE id = ?1");
        q.bind(1, id);
        if (!q.step())
            throw IpamError(codes::io_failure, "ipam datastore: allocation of unknown pool " + std::to_string(id));
        auto range = base::IpNetwork::parse(q.text(1));
        if (!range) throw IpamError(codes::io_failure, "ipam datastore: malformed pool range " + q.text(1));
        return pool_keys.emplace(id, PoolKey{q.text(0), *range}).first->second;
    }

    Allocation make_allocation(std::int64_t pool, uint128 offset, Owner owner, std::string network) {
        const PoolKey& key = key_of(pool);
        const auto ip = base::IpAddress::from_u128(key.range.address.family(), key.range.address.to_u128() + offset);
        return Allocation{key, offset, ip, std::move(owner), std::move(network), false};
    }

    // `pool_runs`/`res_runs`: the run sets the search just read (so their floor answers are reused).
    // `if_new`: insert nothing and return false when (pool, owner.podref, owner.ifname) already has a
    // row; otherwise that conflict is an error like any other.
    bool insert_allocation(std::int64_t pool, uint128 offset, const Owner& owner, std::string_view network,
                           const std::optional<std::string>& reservation, SqlRuns& pool_runs, SqlRuns* res_runs,
                           bool if_new = false) {
        {
            // (pool, podref, ifname) is unique in both schema versions (the key in 2, an index in
            // 1), so it can be the upsert's conflict target; a conflict on anything else still fails.
            sql::Query q(
                db, if_new
                        ? "INSERT INTO allocations(pool, offset, container_id, podref, ifname, network, reservation) "
                          "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(pool, podref, ifname) DO NOTHING"
                        : "INSERT INTO allocations(pool, offset, container_id, podref, ifname, network, reservation) "
                          "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
            q.bind(1, pool).bind_u128(2, offset).bind(3, owner.container_id).bind(4, owner.podref);
            q.bind(5, owner.ifname).bind(6, network);
            if (reservation)
                q.bind(7, *reservation);
            else
                q.bind_null(7);
            q.run();
            if (if_new && sqlite3_changes(db.get()) == 0) return false;
        }
        // The pool's run set refuses an offset it already holds: that is what keeps (pool, offset)
        // unique in schema 2 (in schema 1 the row's PRIMARY KEY has refused it already). A
        // reservation must be new too. Throwing rolls the whole transaction back.
        const PoolKey& key = key_of(pool);
        if (!runs::insert(pool_runs, offset)) {
            throw IpamError(codes::io_failure, "ipam datastore: runs of pool " + key.name() + " already hold offset " +
                                                   to_decimal(offset) + " (inconsistent)");
        }
        if (reservation) {
            const auto ip =
                base::IpAddress::from_u128(key.range.address.family(), key.range.address.to_u128() + offset);
            std::optional<SqlRuns> own;
            if (!res_runs) res_runs = &own.emplace(db, *reservation);
            if (!runs::insert(*res_runs, ip.to_u128())) {
                throw IpamError(codes::address_in_use, ip.str() + " is already reserved by an overlapping range of " +
                                                           "network_name \"" + key.network_name + "\"");
            }
        }
        return true;
    }

    // The run-set half of deleting an allocation row.
    void erase_runs(std::int64_t pool, uint128 offset, const std::optional<std::string>& reservation) {
        SqlRuns pool_runs(db, pool_space(pool));
        runs::erase(pool_runs, offset);
        if (reservation) {
            SqlRuns res_runs(db, *reservation);
            runs::erase(res_runs, key_of(pool).range.address.to_u128() + offset);
        }
    }

    struct Row {
        std::int64_t pool;
        uint128 offset;
        Owner owner;
        std::string network;
        std::optional<std::string> reservation;
    };

    // Rows come from "SELECT pool, offset, container_id, podref, ifname, network, reservation ...".
    static Row read_row(const sql::Query& q) {
        Row r{q.int64(0), q.u128(1), Owner{q.text(2), q.text(3), q.text(4)}, q.text(5), std::nullopt};
        if (!q.is_null(6)) r.reservation = q.text(6);
        return r;
    }

    // By (pool, podref, ifname): indexed in both schema versions.
    void delete_allocation(const Row& row) {
        {
            sql::Query q(db, "DELETE FROM allocations WHERE pool = ?1 AND podref = ?2 AND ifname = ?3");
            q.bind(1, row.pool).bind(2, row.owner.podref).bind(3, row.owner.ifname).run();
        }
        erase_runs(row.pool, row.offset, row.reservation);
    }

    std::vector<Allocation> release_rows(const std::vector<Row>& rows) {
        std::vector<Allocation> released;
        for (const auto& row : rows) {
            delete_allocation(row);
            released.push_back(make_allocation(row.pool, row.offset, row.owner, row.network));
        }
        return released;
    }
};

SqliteStore::SqliteStore(const std::string& data_dir, std::chrono::milliseconds busy_timeout) {
    make_private_dir(data_dir);
    const std::string path = data_dir + "/" + kFileName;
    make_private_file(path);
    impl_ = std::make_unique<Impl>(path, static_cast<int>(busy_timeout.count()));
    impl_->init_schema();
}

SqliteStore::~SqliteStore() = default;

const std::string& SqliteStore::path() const { return impl_->db.path(); }

Allocation SqliteStore::allocate(const AllocateRequest& request) {
    try {
        return allocate_once(request);
    } catch (...) {
        impl_->forget();  // the transaction rolled back: a pool it created is gone again
        throw;
    }
}

Allocation SqliteStore::allocate_once(const AllocateRequest& request) {
    auto& db = impl_->db;
    sql::Transaction t(db, sql::Transaction::Kind::write);
    const PoolKey key = request.pool();
    const std::int64_t pool = impl_->ensure_pool(key);

    SqlRuns pool_runs(db, pool_space(pool));
    PoolCoverage pool_taken(pool_runs);
    std::optional<std::string> reservation;
    std::optional<SqlRuns> res_runs;
    std::optional<ReservationCoverage> res_taken;
    std::vector<Coverage*> taken{&pool_taken};
    if (request.overlapping_check) {
        reservation = reservation_space(request.network_name, key.range.address.family());
        res_runs.emplace(db, *reservation);
        res_taken.emplace(*res_runs, key.range);
        taken.push_back(&*res_taken);
    }

    // The usual ADD is a new attachment: decide as if it held nothing and let the insert find out
    // (its conflict on (pool, podref, ifname)), instead of looking the owner up first. If it does hold
    // an address - a re-ADD, or a full pool that may still have its address - nothing has been
    // written yet, and the general path below decides with what it holds.
    if (!request.requested) {
        std::optional<Decision> fresh;
        try {
            fresh = decide(request.range, std::nullopt, std::nullopt, taken);
        } catch (const IpamError& e) {
            if (e.code != codes::range_full) throw;
        }
        if (fresh && impl_->insert_allocation(pool, fresh->offset, request.owner, request.network, reservation,
                                              pool_runs, res_runs ? &*res_runs : nullptr, /*if_new=*/true)) {
            t.commit();
            return impl_->make_allocation(pool, fresh->offset, request.owner, request.network);
        }
    }

    std::optional<Impl::Row> existing;
    {
        sql::Query q(db,
                     "SELECT pool, offset, container_id, podref, ifname, network, reservation "
                     "FROM allocations WHERE pool = ?1 AND podref = ?2 AND ifname = ?3");
        q.bind(1, pool).bind(2, request.owner.podref).bind(3, request.owner.ifname);
        if (q.step()) existing = Impl::read_row(q);
    }
    const Decision d =
        decide(request.range, existing ? std::optional(existing->offset) : std::nullopt, request.requested, taken);
    if (d.reuse) {
        // whereabouts' stickiness: the same podRef+ifname keeps its address under the new container id.
        sql::Query q(
            db,
            "UPDATE allocations SET container_id = ?1, network = ?2 WHERE pool = ?3 AND podref = ?4 AND ifname = ?5");
        q.bind(1, request.owner.container_id).bind(2, request.network).bind(3, pool);
        q.bind(4, request.owner.podref).bind(5, request.owner.ifname).run();
    } else {
        if (d.drop_existing) {
            impl_->delete_allocation(*existing);
            pool_runs.invalidate();  // changed behind their backs
            if (res_runs) res_runs->invalidate();
        }
        impl_->insert_allocation(pool, d.offset, request.owner, request.network, reservation, pool_runs,
                                 res_runs ? &*res_runs : nullptr);
    }
    t.commit();
    Allocation a = impl_->make_allocation(pool, d.offset, request.owner, request.network);
    a.reused = d.reuse;
    return a;
}

std::vector<Allocation> SqliteStore::release(std::span<const PoolKey> /*pools*/, const AttachmentId& attachment) {
    // Every pool of this node, not only the configured ones: an edited range must not leak the
    // address the attachment got from the old one.
    auto& db = impl_->db;
    sql::Transaction t(db, sql::Transaction::Kind::write);
    // Not DELETE ... RETURNING: SQLite gathers the returned rows in an ephemeral table, which opens
    // and closes a temporary pager per statement (measured: +40 us per DEL).
    std::vector<Impl::Row> rows;
    {
        sql::Query q(db,
                     "SELECT pool, offset, container_id, podref, ifname, network, reservation "
                     "FROM allocations WHERE container_id = ?1 AND ifname = ?2");
        q.bind(1, attachment.container_id).bind(2, attachment.ifname);
        while (q.step()) rows.push_back(Impl::read_row(q));
    }
    auto released = impl_->release_rows(rows);
    t.commit();
    return released;
}

std::optional<Allocation> SqliteStore::find(const PoolKey& pool_key, std::string_view podref, std::string_view ifname) {
    auto& db = impl_->db;
    sql::Transaction t(db, sql::Transaction::Kind::read);
    auto pool = impl_->pool_id(pool_key);
    if (!pool) return std::nullopt;
    sql::Query q(db,
                 "SELECT pool, offset, container_id, podref, ifname, network, reservation "
                 "FROM allocations WHERE pool = ?1 AND podref = ?2 AND ifname = ?3");
    q.bind(1, *pool).bind(2, podref).bind(3, ifname);
    if (!q.step()) return std::nullopt;
    Impl::Row row = Impl::read_row(q);
    return impl_->make_allocation(row.pool, row.offset, row.owner, row.network);
}

std::vector<PoolKey> SqliteStore::pools() {
    sql::Query q(impl_->db, "SELECT network_name, range FROM pools ORDER BY network_name, range");
    std::vector<PoolKey> out;
    while (q.step()) {
        auto range = base::IpNetwork::parse(q.text(1));
        if (!range) throw IpamError(codes::io_failure, "ipam datastore: malformed pool range " + q.text(1));
        out.push_back(PoolKey{q.text(0), *range});
    }
    return out;
}

PoolDump SqliteStore::dump(const PoolKey& pool_key) {
    auto& db = impl_->db;
    sql::Transaction t(db, sql::Transaction::Kind::read);
    PoolDump out{pool_key, {}};
    auto pool = impl_->pool_id(pool_key);
    if (!pool) return out;
    sql::Query q(db, "SELECT offset, container_id, podref, ifname FROM allocations WHERE pool = ?1 ORDER BY offset");
    q.bind(1, *pool);
    while (q.step()) out.allocations.emplace(q.u128(0), Owner{q.text(1), q.text(2), q.text(3)});
    return out;
}

std::vector<Allocation> SqliteStore::gc(std::string_view network, std::span<const PoolKey> /*pools*/,
                                        std::span<const AttachmentId> valid) {
    // Scoped by the CNI network that made each allocation, not by pool: two networks may share a
    // pool, and one network's valid list says nothing about the other's attachments.
    const std::set<AttachmentId> keep(valid.begin(), valid.end());
    auto& db = impl_->db;
    sql::Transaction t(db, sql::Transaction::Kind::write);
    std::vector<Impl::Row> stale;
    {
        sql::Query q(db,
                     "SELECT pool, offset, container_id, podref, ifname, network, reservation "
                     "FROM allocations WHERE network = ?1");
        q.bind(1, network);
        while (q.step()) {
            Impl::Row row = Impl::read_row(q);
            if (!keep.contains(AttachmentId{row.owner.container_id, row.owner.ifname})) stale.push_back(std::move(row));
        }
    }
    auto released = impl_->release_rows(stale);
    t.commit();
    return released;
}

void SqliteStore::import_pool(const PoolDump& dump, std::string_view network) {
    try {
        import_once(dump, network);
    } catch (...) {
        impl_->forget();
        throw;
    }
}

void SqliteStore::import_once(const PoolDump& dump, std::string_view network) {
    auto& db = impl_->db;
    sql::Transaction t(db, sql::Transaction::Kind::write);
    const std::int64_t pool = impl_->ensure_pool(dump.pool);
    const std::string space = pool_space(pool);
    // Bulk: the runs are rebuilt in memory and written once instead of maintained per row.
    MemoryRuns runs;
    {
        sql::Query q(db, "SELECT lo, hi FROM runs WHERE space = ?1");
        q.bind(1, space);
        while (q.step()) runs.put({q.u128(0), q.u128(1)});
    }
    for (const auto& [offset, owner] : dump.allocations) {
        if (!runs.insert(offset)) {
            throw IpamError(codes::address_in_use, "import into pool " + dump.pool.name() + ": offset " +
                                                       to_decimal(offset) + " is already allocated");
        }
        sql::Query q(db,
                     "INSERT INTO allocations(pool, offset, container_id, podref, ifname, network, reservation) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, NULL)");
        q.bind(1, pool).bind_u128(2, offset).bind(3, owner.container_id).bind(4, owner.podref);
        q.bind(5, owner.ifname).bind(6, network).run();
    }
    {
        sql::Query q(db, "DELETE FROM runs WHERE space = ?1");
        q.bind(1, space).run();
    }
    for (const auto& [lo, hi] : runs.all()) {
        sql::Query q(db, "INSERT INTO runs(space, lo, hi) VALUES(?1, ?2, ?3)");
        q.bind(1, space).bind_u128(2, lo).bind_u128(3, hi).run();
    }
    t.commit();
}

std::vector<std::string> SqliteStore::verify() {
    auto& db = impl_->db;
    sql::Transaction t(db, sql::Transaction::Kind::read);
    std::map<std::string, MemoryRuns> expected;  // space -> what the runs table should hold
    std::vector<std::string> problems;
    {
        sql::Query q(db, "SELECT pool, offset, reservation FROM allocations");
        while (q.step()) {
            const std::int64_t pool = q.int64(0);
            const uint128 offset = q.u128(1);
            // Schema 2 has no (pool, offset) key: a second row for an offset is only caught here.
            if (!expected[pool_space(pool)].insert(offset)) {
                problems.push_back("offset " + to_decimal(offset) + " of " + impl_->key_of(pool).name() +
                                   " is allocated twice");
            }
            if (!q.is_null(2)) {
                const uint128 ip = impl_->key_of(pool).range.address.to_u128() + offset;
                if (!expected[q.text(2)].insert(ip)) {
                    problems.push_back("address " + to_decimal(ip) + " is reserved twice in " + q.text(2));
                }
            }
        }
    }
    std::map<std::string, std::map<uint128, uint128>> actual;
    {
        sql::Query q(db, "SELECT space, lo, hi FROM runs");
        while (q.step()) actual[q.text(0)][q.u128(1)] = q.u128(2);
    }
    for (const auto& [space, runs] : expected) {
        if (actual[space] != runs.all()) problems.push_back("runs of " + space + " do not match its allocations");
    }
    for (const auto& [space, runs] : actual) {
        if (!runs.empty() && !expected.contains(space)) problems.push_back("runs of " + space + " without allocations");
    }
    return problems;
}

}  // namespace rdmanet::ipam
