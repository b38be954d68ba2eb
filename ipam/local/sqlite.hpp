#pragma once
// Small RAII types over the SQLite C API (internal to the ipam module): a connection, cached
// prepared statements, a scoped use of a statement that always resets it, and a transaction that
// rolls back unless committed - so an exception at any point can neither leak a handle nor leave a
// transaction open.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include <sqlite3.h>

#include "rdmanet/ipam/core/u128.hpp"

namespace rdmanet::ipam::sql {

// Throws IpamError: try_again for SQLITE_BUSY/LOCKED (the busy timeout ran out), io_failure otherwise.
[[noreturn]] void fail(sqlite3* db, int rc, std::string_view what);

class Statement {
public:
    Statement(sqlite3* db, const char* sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    sqlite3_stmt* get() const { return stmt_; }

private:
    sqlite3_stmt* stmt_ = nullptr;
};

class Db {
public:
    Db(const std::string& path, int busy_timeout_ms);
    ~Db();
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;

    sqlite3* get() const { return db_; }
    const std::string& path() const { return path_; }
    void exec(const char* sql);
    // Prepared once per connection. `sql` must be a string literal: it is the cache key.
    sqlite3_stmt* statement(const char* sql);

private:
    sqlite3* db_ = nullptr;
    std::string path_;
    std::unordered_map<const char*, std::unique_ptr<Statement>> cache_;
};

// One execution of a cached statement; resets it and clears its bindings on scope exit.
//
// Bound text and blobs are not copied (SQLITE_STATIC): a copy is a malloc and a free per bind,
// which showed in the in-process benchmark's profile. So text bound through a string_view or an
// lvalue string must outlive the Query (it always does: a Query lives for one statement in one
// scope); an rvalue string is copied, and u128 blobs are kept in the Query itself.
class Query {
public:
    Query(Db& db, const char* sql) : db_(db), stmt_(db.statement(sql)) {}
    ~Query() {
        sqlite3_reset(stmt_);
        sqlite3_clear_bindings(stmt_);
    }
    Query(const Query&) = delete;
    Query& operator=(const Query&) = delete;

    Query& bind(int index, std::int64_t value);
    Query& bind(int index, std::string_view text);
    Query& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
    Query& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
    Query& bind(int index, std::string&& text);  // a temporary: copied
    Query& bind_u128(int index, uint128 value);  // 16-byte big-endian BLOB
    Query& bind_null(int index);

    // true while a row is available; false when done. Throws on errors.
    bool step();
    // step() that must finish without a row (INSERT/UPDATE/DELETE).
    void run();

    std::int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
    std::string text(int col) const;
    bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
    uint128 u128(int col) const;  // throws io_failure when the column is not a 16-byte BLOB

private:
    Db& db_;
    sqlite3_stmt* stmt_;
    std::array<Be128, 4> blobs_;  // bind_u128's bytes for parameters 1-4 (more are copied)
};

// BEGIN IMMEDIATE (write lock taken up front, so the read-decide-write sequence cannot be
// interleaved) or BEGIN (read snapshot). Rolls back in the destructor unless committed.
class Transaction {
public:
    enum class Kind { read, write };
    Transaction(Db& db, Kind kind);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

private:
    Db& db_;
    bool open_ = false;
};

}  // namespace rdmanet::ipam::sql
