#pragma once
// The one way rdmanet replaces a file: readers see the old content or the new, never a mix, and
// after a crash or power loss the new content is there once the call returned.
//
//   1. a temporary file next to the target, created exclusively (O_EXCL | O_NOFOLLOW): nothing
//      that already exists at that name, a planted symlink included, is opened or followed;
//   2. the content written in full, then fsync'd (the data reaches the disk before the rename);
//   3. renameat over the target (a symlink at the target is replaced, never followed);
//   4. fsync of the directory (the rename itself is durable).
// Every step works relative to a directory fd, so a caller that opened the directory through a
// confined walk (confined_file.hpp) keeps that guarantee for the whole write.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <string_view>
#include <system_error>

#include "rdmanet/base/fd.hpp"

namespace rdmanet::base {

namespace detail {

inline std::string temporary_name(std::string_view name) {
    static std::atomic<unsigned> counter{0};
    return "." + std::string(name) + ".tmp." + std::to_string(::getpid()) + "." +
           std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
}

[[noreturn]] inline void fail(int err, const std::string& what) {
    throw std::system_error(err, std::generic_category(), what);
}

}  // namespace detail

// Replaces `name` in the directory `dir_fd` with `content` (file mode `mode`). `name` is a single
// path component. Throws std::system_error naming the step and the file; on failure the target
// is unchanged and no temporary file is left behind.
inline void write_file_atomically(int dir_fd, const std::string& name, std::string_view content, mode_t mode = 0600) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        detail::fail(EINVAL, "not a file name: \"" + name + "\"");
    const std::string tmp = detail::temporary_name(name);
    UniqueFd fd(::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd) detail::fail(errno, "cannot create " + tmp);
    auto give_up = [&](const std::string& what) {
        const int err = errno;
        ::unlinkat(dir_fd, tmp.c_str(), 0);
        detail::fail(err, what);
    };
    // O_CREAT's mode is filtered by the umask; the caller's mode is what it asked for.
    if (::fchmod(fd.get(), mode) != 0) give_up("cannot set the mode of " + tmp);
    std::size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;
            give_up("cannot write " + tmp);
        }
        done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0) give_up("cannot fsync " + tmp);
    fd.reset();
    if (::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) give_up("cannot rename " + tmp + " to " + name);
    // The rename is in place; a failed directory fsync only weakens durability, so it is
    // reported like any other failure and the caller decides (the new content is already visible).
    if (::fsync(dir_fd) != 0) detail::fail(errno, "cannot fsync the directory of " + name);
}

// The same for a path: its directory is opened (O_DIRECTORY; symlinks in the directory part are
// followed as for any path the admin configured) and `content` replaces the last component.
inline void write_file_atomically(const std::string& path, std::string_view content, mode_t mode = 0600) {
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) detail::fail(errno, "cannot create a temporary file in " + dir);
    write_file_atomically(dir_fd.get(), name, content, mode);
}

}  // namespace rdmanet::base
