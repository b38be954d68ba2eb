#include "sqlite.hpp"

#include <bit>
#include <cstring>

#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::ipam::sql {

void fail(sqlite3* db, int rc, std::string_view what) {
    std::string msg = "ipam datastore";
    if (db) {
        if (const char* file = sqlite3_db_filename(db, "main"); file && *file) msg += " " + std::string(file);
    }
    msg += ": " + std::string(what) + ": ";
    msg += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    const int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
        throw IpamError(codes::try_again, msg + " (another process held the datastore past the busy timeout)");
    }
    throw IpamError(codes::io_failure, msg);
}

Statement::Statement(sqlite3* db, const char* sql) {
    const int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
    if (rc != SQLITE_OK) fail(db, rc, std::string("prepare ") + sql);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

namespace {

// u128.hpp's to_be128/from_be128 with two byte swaps instead of a loop per byte: every offset
// bound to or read from a statement goes through these.
std::uint64_t to_big_endian(std::uint64_t v) {
    if constexpr (std::endian::native == std::endian::little) return __builtin_bswap64(v);
    return v;
}

void store_be128(uint128 value, std::uint8_t* out) {
    const std::uint64_t hi = to_big_endian(static_cast<std::uint64_t>(value >> 64));
    const std::uint64_t lo = to_big_endian(static_cast<std::uint64_t>(value));
    std::memcpy(out, &hi, 8);
    std::memcpy(out + 8, &lo, 8);
}

uint128 load_be128(const std::uint8_t* bytes) {
    std::uint64_t hi, lo;
    std::memcpy(&hi, bytes, 8);
    std::memcpy(&lo, bytes + 8, 8);
    return (static_cast<uint128>(to_big_endian(hi)) << 64) | to_big_endian(lo);  // the swap is its own inverse
}

// Process-wide settings, applied once before SQLite initialises (sqlite3_config refuses them
// afterwards, e.g. when something else in the process opened a database first: they are only
// speed-ups, so that is ignored). MEMSTATUS=0: SQLite otherwise takes a global mutex on every
// malloc and free to keep memory statistics nobody reads, and Debian's build has no lookaside
// allocator, so that is dozens of lock/unlock pairs per statement. (The connection mutex is
// already gone: connections are opened NOMUTEX, one per thread.)
void configure_sqlite_once() {
    static const bool configured = [] {
        sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
        return true;
    }();
    (void)configured;
}

}  // namespace

Db::Db(const std::string& path, int busy_timeout_ms) : path_(path) {
    configure_sqlite_once();
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);  // SQLite's default ("unix") VFS
    if (rc != SQLITE_OK) {
        // sqlite3_open_v2 hands back a handle even on failure; it must still be closed.
        std::string msg = "ipam datastore " + path + ": open: " + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
        sqlite3_close_v2(db_);
        db_ = nullptr;
        throw IpamError(codes::io_failure, msg);
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, busy_timeout_ms);
}

Db::~Db() {
    cache_.clear();  // statements first: close_v2 would otherwise keep the connection as a zombie
    sqlite3_close_v2(db_);
}

void Db::exec(const char* sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
    sqlite3_free(err);
    if (rc != SQLITE_OK) fail(db_, rc, sql);
}

sqlite3_stmt* Db::statement(const char* sql) {
    auto& slot = cache_[sql];
    if (!slot) slot = std::make_unique<Statement>(db_, sql);
    return slot->get();
}

Query& Query::bind(int index, std::int64_t value) {
    if (const int rc = sqlite3_bind_int64(stmt_, index, value); rc != SQLITE_OK) fail(db_.get(), rc, "bind");
    return *this;
}

Query& Query::bind(int index, std::string_view text) {
    const int rc = sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
    if (rc != SQLITE_OK) fail(db_.get(), rc, "bind");
    return *this;
}

Query& Query::bind(int index, std::string&& text) {
    const int rc = sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) fail(db_.get(), rc, "bind");
    return *this;
}

Query& Query::bind_u128(int index, uint128 value) {
    int rc;
    if (index >= 1 && static_cast<std::size_t>(index) <= blobs_.size()) {
        Be128& bytes = blobs_[static_cast<std::size_t>(index - 1)];
        store_be128(value, bytes.data());
        rc = sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
    } else {
        Be128 bytes;
        store_be128(value, bytes.data());
        rc = sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
    }
    if (rc != SQLITE_OK) fail(db_.get(), rc, "bind");
    return *this;
}

Query& Query::bind_null(int index) {
    if (const int rc = sqlite3_bind_null(stmt_, index); rc != SQLITE_OK) fail(db_.get(), rc, "bind");
    return *this;
}

bool Query::step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_.get(), rc, sqlite3_sql(stmt_));
}

void Query::run() {
    if (step()) throw IpamError(codes::io_failure, std::string("unexpected row from ") + sqlite3_sql(stmt_));
}

std::string Query::text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
}

uint128 Query::u128(int col) const {
    if (sqlite3_column_type(stmt_, col) != SQLITE_BLOB || sqlite3_column_bytes(stmt_, col) != 16) {
        throw IpamError(codes::io_failure,
                        "ipam datastore " + db_.path() + ": malformed offset in " + sqlite3_sql(stmt_));
    }
    return load_be128(static_cast<const std::uint8_t*>(sqlite3_column_blob(stmt_, col)));
}

// BEGIN and COMMIT as cached statements: sqlite3_exec would parse them again for every
// transaction, which showed in the in-process benchmark's profile.
Transaction::Transaction(Db& db, Kind kind) : db_(db) {
    if (kind == Kind::write)
        Query(db_, "BEGIN IMMEDIATE").run();
    else
        Query(db_, "BEGIN").run();
    open_ = true;
}

Transaction::~Transaction() {
    if (!open_) return;
    // Never throws: a failed rollback leaves the transaction to be rolled back when the connection
    // closes, which SQLite does automatically.
    sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
    Query(db_, "COMMIT").run();
    open_ = false;
}

}  // namespace rdmanet::ipam::sql
