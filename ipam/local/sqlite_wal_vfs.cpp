// A VFS that is SQLite's own ("unix": every lock, sync and shared-memory call unchanged) except
// that the WAL frames of a transaction reach the kernel in one pwrite instead of two per frame.
//
// Why: SQLite writes each WAL frame as a 24-byte header and then the page, two pwrite calls; at
// three frames per transaction and two transactions per ADD+DEL that was 12 syscalls, as much
// kernel time as the six fcntl locks the transactions need. Here the frames SQLite appends are
// gathered and written together, at the latest by the write that completes the commit frame.
//
// Why this cannot change what a crash or another process sees. SQLite (3.40, wal.c) writes to a
// WAL file in these ways:
//  1. walWriteOneFrame: a frame header, then its page at the next offset. Held, frame after frame
//     (up to kFlushAt bytes). The commit frame is the one whose header carries the database size
//     (bytes 4-7, zero in every other frame): the write of its page sends everything held, and
//     itself, to the kernel before returning - before SQLite publishes the commit in the
//     wal-index, which is the only way other connections and processes learn of frames.
//  2. The 32-byte WAL header when the log (re)starts, followed by a sync or by the first frame:
//     held like a frame header.
//  3. walRewriteChecksums, at a commit that overwrote frames of its own transaction: each frame
//     header is read, then rewritten, and the last rewrite may be followed by nothing but the
//     publication. A write that follows a read is never held.
//  4. Page overwrites in place, and anything else: held bytes first, then the write, at once.
// Any other call on the file (read, sync, truncate, size, close, ...) writes what is held first,
// so the file is as SQLite expects whenever it looks at it. Frames still held belong to a
// transaction that has not committed; a process killed then loses them, as a stock SQLite killed
// a moment earlier would, and recovery ignores frames without a commit frame after them anyway.
// A sequence that is not SQLite's frame pattern is written through, so a different frame writer
// in some other SQLite version would degrade this to the stock behaviour, not break it.
// The unit tests copy the files after commits (what a SIGKILL leaves) and recover them with the
// stock VFS, including the rewrite of case 3.
#include <cstring>
#include <mutex>

#include "sqlite.hpp"

namespace rdmanet::ipam::sql {

namespace {

constexpr int kWalHeaderSize = 32;      // WAL_HDRSIZE in wal.c
constexpr int kFrameHeaderSize = 24;    // WAL_FRAME_HDRSIZE
constexpr int kMinPageSize = 512;
constexpr int kFlushAt = 64 * 1024;     // held bytes before a new frame starts a fresh buffer
constexpr int kBufferSize = kFlushAt + kFrameHeaderSize + 65536;   // + one frame of the largest page

// What the held bytes end with; the only sequences held are SQLite's frame pattern:
// [WAL header] (frame header, page)* [frame header].
enum class Held : unsigned char { nothing, wal_header, frame_header, commit_header, frame };

struct WalFile {
    sqlite3_file base;                  // pMethods = &wal_methods
    sqlite3_file* real;                 // the unix VFS's file, stored right after this struct
    unsigned char* buffer;              // kBufferSize bytes, allocated on first use
    sqlite3_int64 held_offset;
    int held_len;
    Held held;
    bool after_read;                    // the last call was xRead: write through (case 3 above)
};
// The real file follows at this offset; keep it aligned for the unix VFS's struct.
constexpr std::size_t kRealOffset = (sizeof(WalFile) + 15) & ~std::size_t{15};

sqlite3_vfs* base_vfs = nullptr;
sqlite3_vfs wal_vfs;
sqlite3_io_methods wal_methods;

WalFile* wal(sqlite3_file* f) { return reinterpret_cast<WalFile*>(f); }
sqlite3_file* real(sqlite3_file* f) { return wal(f)->real; }

int release_held(sqlite3_file* f) {
    WalFile* w = wal(f);
    w->held = Held::nothing;
    if (w->held_len == 0) return SQLITE_OK;
    const int len = w->held_len;
    w->held_len = 0;
    return w->real->pMethods->xWrite(w->real, w->buffer, len, w->held_offset);
}

void hold(WalFile* w, const void* data, int amount, sqlite3_int64 offset, Held what) {
    if (w->held_len == 0) w->held_offset = offset;
    std::memcpy(w->buffer + w->held_len, data, static_cast<std::size_t>(amount));
    w->held_len += amount;
    w->held = what;
}

int wal_write(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
    WalFile* w = wal(f);
    const bool after_read = w->after_read;
    w->after_read = false;
    const bool follows = w->held_len > 0 && offset == w->held_offset + w->held_len;

    // The page of a held frame header. A commit frame is written out with everything before it
    // here, in the write that completes it, before SQLite goes on to publish the commit.
    if (follows && (w->held == Held::frame_header || w->held == Held::commit_header) && amount >= kMinPageSize &&
        w->held_len + amount <= kBufferSize) {
        const bool commit = w->held == Held::commit_header;
        hold(w, data, amount, offset, Held::frame);
        return commit ? release_held(f) : SQLITE_OK;
    }

    // A frame header after a complete frame (or the WAL header), or the WAL header of a log that
    // (re)starts. Bytes 4-7 of a frame header are the database size after a commit, 0 otherwise.
    const bool frame_header = amount == kFrameHeaderSize;
    const bool wal_header = amount == kWalHeaderSize && offset == 0;
    if (!after_read && (frame_header || wal_header)) {
        const bool continues = follows && (w->held == Held::frame || w->held == Held::wal_header) && frame_header &&
                               w->held_len <= kFlushAt;
        if (!continues) {
            if (const int rc = release_held(f); rc != SQLITE_OK) return rc;
        }
        if (!w->buffer) w->buffer = static_cast<unsigned char*>(sqlite3_malloc(kBufferSize));
        if (w->buffer) {
            const auto* b = static_cast<const unsigned char*>(data);
            const bool commit = frame_header && (b[4] | b[5] | b[6] | b[7]) != 0;
            hold(w, data, amount, offset, wal_header ? Held::wal_header : commit ? Held::commit_header : Held::frame_header);
            return SQLITE_OK;
        }
    }

    // Anything else goes out as it comes, after what is held.
    if (const int rc = release_held(f); rc != SQLITE_OK) return rc;
    return w->real->pMethods->xWrite(w->real, data, amount, offset);
}

int wal_close(sqlite3_file* f) {
    const int held_rc = release_held(f);
    const int rc = real(f)->pMethods->xClose(real(f));
    sqlite3_free(wal(f)->buffer);
    wal(f)->buffer = nullptr;
    return held_rc != SQLITE_OK ? held_rc : rc;
}

// Every other method: write out what is held, then do what the unix VFS does.
#define RDMANET_FORWARD(name, params, args)                                   \
    int wal_##name params {                                                   \
        if (const int rc = release_held(f); rc != SQLITE_OK) return rc;       \
        return real(f)->pMethods->name args;                                  \
    }
int wal_xRead(sqlite3_file* f, void* data, int amount, sqlite3_int64 offset) {
    if (const int rc = release_held(f); rc != SQLITE_OK) return rc;
    wal(f)->after_read = true;
    return real(f)->pMethods->xRead(real(f), data, amount, offset);
}
RDMANET_FORWARD(xTruncate, (sqlite3_file* f, sqlite3_int64 size), (real(f), size))
RDMANET_FORWARD(xSync, (sqlite3_file* f, int flags), (real(f), flags))
RDMANET_FORWARD(xFileSize, (sqlite3_file* f, sqlite3_int64* size), (real(f), size))
RDMANET_FORWARD(xLock, (sqlite3_file* f, int level), (real(f), level))
RDMANET_FORWARD(xUnlock, (sqlite3_file* f, int level), (real(f), level))
RDMANET_FORWARD(xCheckReservedLock, (sqlite3_file* f, int* out), (real(f), out))
RDMANET_FORWARD(xFileControl, (sqlite3_file* f, int op, void* arg), (real(f), op, arg))
RDMANET_FORWARD(xShmMap, (sqlite3_file* f, int region, int size, int extend, void volatile** p),
                (real(f), region, size, extend, p))
RDMANET_FORWARD(xShmLock, (sqlite3_file* f, int offset, int n, int flags), (real(f), offset, n, flags))
RDMANET_FORWARD(xShmUnmap, (sqlite3_file* f, int delete_flag), (real(f), delete_flag))
RDMANET_FORWARD(xFetch, (sqlite3_file* f, sqlite3_int64 o, int n, void** p), (real(f), o, n, p))
RDMANET_FORWARD(xUnfetch, (sqlite3_file* f, sqlite3_int64 o, void* p), (real(f), o, p))
#undef RDMANET_FORWARD
int wal_xSectorSize(sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); }
int wal_xDeviceCharacteristics(sqlite3_file* f) { return real(f)->pMethods->xDeviceCharacteristics(real(f)); }
void wal_xShmBarrier(sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); }

// Only WAL files are wrapped: the database file (locks, shared memory, mmap) is the unix VFS's
// own struct, opened in place.
int vfs_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
    if ((flags & SQLITE_OPEN_WAL) == 0) return base_vfs->xOpen(base_vfs, name, file, flags, out_flags);
    WalFile* w = wal(file);
    w->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + kRealOffset);
    w->real->pMethods = nullptr;
    w->buffer = nullptr;
    w->held_len = 0;
    w->held = Held::nothing;
    w->after_read = false;
    const int rc = base_vfs->xOpen(base_vfs, name, w->real, flags, out_flags);
    // SQLite calls xClose after a failed xOpen only when pMethods is set; mirror the real file.
    file->pMethods = w->real->pMethods ? &wal_methods : nullptr;
    return rc;
}

// The remaining VFS methods are the unix VFS's, called with its own vfs object.
int vfs_delete(sqlite3_vfs*, const char* name, int sync_dir) { return base_vfs->xDelete(base_vfs, name, sync_dir); }
int vfs_access(sqlite3_vfs*, const char* name, int flags, int* out) { return base_vfs->xAccess(base_vfs, name, flags, out); }
int vfs_full_pathname(sqlite3_vfs*, const char* name, int n, char* out) {
    return base_vfs->xFullPathname(base_vfs, name, n, out);
}
void* vfs_dlopen(sqlite3_vfs*, const char* name) { return base_vfs->xDlOpen(base_vfs, name); }
void vfs_dlerror(sqlite3_vfs*, int n, char* out) { base_vfs->xDlError(base_vfs, n, out); }
void (*vfs_dlsym(sqlite3_vfs*, void* h, const char* sym))(void) { return base_vfs->xDlSym(base_vfs, h, sym); }
void vfs_dlclose(sqlite3_vfs*, void* h) { base_vfs->xDlClose(base_vfs, h); }
int vfs_randomness(sqlite3_vfs*, int n, char* out) { return base_vfs->xRandomness(base_vfs, n, out); }
int vfs_sleep(sqlite3_vfs*, int us) { return base_vfs->xSleep(base_vfs, us); }
int vfs_current_time(sqlite3_vfs*, double* out) { return base_vfs->xCurrentTime(base_vfs, out); }
int vfs_last_error(sqlite3_vfs*, int n, char* out) { return base_vfs->xGetLastError(base_vfs, n, out); }
int vfs_current_time64(sqlite3_vfs*, sqlite3_int64* out) { return base_vfs->xCurrentTimeInt64(base_vfs, out); }

}  // namespace

const char* wal_vfs_name() {
    static std::once_flag once;
    static const char* name = nullptr;
    std::call_once(once, [] {
        base_vfs = sqlite3_vfs_find("unix");
        // Versions this was written against: fall back to the default VFS on anything else.
        if (!base_vfs || base_vfs->iVersion < 2) return;
        wal_methods = sqlite3_io_methods{};
        wal_methods.iVersion = 3;
        wal_methods.xClose = wal_close;
        wal_methods.xRead = wal_xRead;
        wal_methods.xWrite = wal_write;
        wal_methods.xTruncate = wal_xTruncate;
        wal_methods.xSync = wal_xSync;
        wal_methods.xFileSize = wal_xFileSize;
        wal_methods.xLock = wal_xLock;
        wal_methods.xUnlock = wal_xUnlock;
        wal_methods.xCheckReservedLock = wal_xCheckReservedLock;
        wal_methods.xFileControl = wal_xFileControl;
        wal_methods.xSectorSize = wal_xSectorSize;
        wal_methods.xDeviceCharacteristics = wal_xDeviceCharacteristics;
        wal_methods.xShmMap = wal_xShmMap;
        wal_methods.xShmLock = wal_xShmLock;
        wal_methods.xShmBarrier = wal_xShmBarrier;
        wal_methods.xShmUnmap = wal_xShmUnmap;
        wal_methods.xFetch = wal_xFetch;
        wal_methods.xUnfetch = wal_xUnfetch;

        wal_vfs = sqlite3_vfs{};
        wal_vfs.iVersion = 2;
        wal_vfs.szOsFile = static_cast<int>(kRealOffset) + base_vfs->szOsFile;
        wal_vfs.mxPathname = base_vfs->mxPathname;
        wal_vfs.zName = "rdmanet-unix-wal";
        wal_vfs.xOpen = vfs_open;
        wal_vfs.xDelete = vfs_delete;
        wal_vfs.xAccess = vfs_access;
        wal_vfs.xFullPathname = vfs_full_pathname;
        wal_vfs.xDlOpen = vfs_dlopen;
        wal_vfs.xDlError = vfs_dlerror;
        wal_vfs.xDlSym = vfs_dlsym;
        wal_vfs.xDlClose = vfs_dlclose;
        wal_vfs.xRandomness = vfs_randomness;
        wal_vfs.xSleep = vfs_sleep;
        wal_vfs.xCurrentTime = vfs_current_time;
        wal_vfs.xGetLastError = vfs_last_error;
        wal_vfs.xCurrentTimeInt64 = vfs_current_time64;
        if (sqlite3_vfs_register(&wal_vfs, 0) == SQLITE_OK) name = wal_vfs.zName;
    });
    return name;
}

}  // namespace rdmanet::ipam::sql
