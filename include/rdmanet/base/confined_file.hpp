#pragma once
// Files named by a network configuration (whose author is not the node admin) are opened only
// inside directories the node admin allowed, and without following symlinks below them: every
// component under the allowed directory is opened with O_NOFOLLOW relative to its parent's fd,
// so a symlink planted (or swapped in) anywhere below the allowed directory is refused instead of
// followed. The allowed directory itself is the admin's and is resolved normally.
//
// Header-only like the rest of the base room. In the base room because both the IPAM (configuration_path, kubeconfig, data_dir, log_file) and
// the cni rooms (logFile, state dir, the node policy, the device-info file) use it.
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "rdmanet/base/fd.hpp"

namespace rdmanet::base {

// Lexical containment, no file system access: `path` is absolute, has no "." or ".." component
// and lies strictly below `dir` (dir itself does not count). Repeated slashes are tolerated.
inline bool is_path_inside(std::string_view path, std::string_view dir);
// The first of `dirs` that contains `path`, "" when none.
inline std::string containing_dir(std::string_view path, const std::vector<std::string>& dirs);
// "/a, /b" for error messages.
inline std::string join_dirs(const std::vector<std::string>& dirs);

// Thrown (as std::system_error-like runtime_error) by the open functions below; `errno_value`
// is ELOOP when a symlink was met below the allowed directory, ENOTDIR for a non-directory
// component.
struct ConfinedFileError : std::runtime_error {
    int errno_value;
    ConfinedFileError(int err, const std::string& what) : std::runtime_error(what), errno_value(err) {}
};

enum class CreateDirs { no, yes };

// Opens the directory `dir` (following symlinks: it is the admin's), then walks the components
// of `path` below it with openat(O_NOFOLLOW); `path` must satisfy is_path_inside(path, dir).
// With CreateDirs::yes missing intermediate directories are created 0700. The last component is
// opened with `flags | O_NOFOLLOW | O_CLOEXEC` and `mode` (for O_CREAT; 0600 is what we use).
// A last component that is not a regular file (FIFO, device, directory) is refused with EINVAL
// before any read would block on it: O_NONBLOCK is added for the open and cleared afterwards.
inline UniqueFd open_confined(const std::string& dir, const std::string& path, int flags, unsigned mode,
                              CreateDirs create_dirs = CreateDirs::no);

// Opens (creating 0700 as needed) the directory `path` below `dir` the same way; returns an
// O_DIRECTORY fd. path == dir is allowed here (the directory itself).
inline UniqueFd open_confined_dir(const std::string& dir, const std::string& path, CreateDirs create_dirs);

// Reads a whole regular file opened by open_confined(dir, path, O_RDONLY); at most `limit` bytes
// (ConfinedFileError EFBIG past it).
inline std::string read_confined(const std::string& dir, const std::string& path, std::size_t limit = 1 << 20);

// Implementation (header-only).

namespace confined_detail {

// Splits "/a//b/c" into {"a","b","c"}.
inline std::vector<std::string_view> components(std::string_view path) {
    std::vector<std::string_view> out;
    while (!path.empty()) {
        const auto slash = path.find('/');
        const auto part = path.substr(0, slash);
        if (!part.empty()) out.push_back(part);
        if (slash == std::string_view::npos) break;
        path.remove_prefix(slash + 1);
    }
    return out;
}

inline bool has_control_character(std::string_view text) {
    for (unsigned char c : text)
        if (c < 0x20 || c == 0x7f) return true;
    return false;
}

[[noreturn]] inline void fail(int err, const std::string& what) {
    throw ConfinedFileError(err, what + ": " + std::strerror(err));
}

inline UniqueFd open_base(const std::string& dir, CreateDirs create_dirs) {
    if (create_dirs == CreateDirs::yes) {
        // The admin's directory: created with its parents (0700 for what we create), following
        // symlinks in it, since the admin may have placed /var/log on another mount.
        std::string prefix;
        for (auto part : components(dir)) {
            prefix += "/";
            prefix += part;
            if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) fail(errno, "cannot create " + prefix);
        }
    }
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) fail(errno, "cannot open directory " + dir);
    return fd;
}

// Walks `parts` below `base` with O_NOFOLLOW, creating missing directories (0700) when asked.
inline UniqueFd walk(UniqueFd base, const std::vector<std::string_view>& parts, const std::string& path,
                     CreateDirs create_dirs) {
    UniqueFd current = std::move(base);
    for (auto part : parts) {
        const std::string name(part);
        if (create_dirs == CreateDirs::yes && ::mkdirat(current.get(), name.c_str(), 0700) != 0 && errno != EEXIST)
            fail(errno, "cannot create directory " + name + " of " + path);
        UniqueFd next(::openat(current.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!next) {
            const int err = errno;
            // O_DIRECTORY|O_NOFOLLOW on a symlink gives ENOTDIR on Linux; say what it really is.
            struct stat st {};
            if (::fstatat(current.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                fail(ELOOP, "component \"" + name + "\" of " + path + " is a symlink, which is not followed");
            fail(err, "cannot open directory component \"" + name + "\" of " + path);
        }
        current = std::move(next);
    }
    return current;
}

inline std::vector<std::string_view> relative_parts(const std::string& dir, const std::string& path) {
    auto all = components(path);
    const auto base = components(dir);
    return {all.begin() + static_cast<std::ptrdiff_t>(base.size()), all.end()};
}

}  // namespace confined_detail

inline bool is_path_inside(std::string_view path, std::string_view dir) {
    if (path.empty() || path.front() != '/' || dir.empty() || dir.front() != '/') return false;
    if (confined_detail::has_control_character(path)) return false;
    const auto p = confined_detail::components(path);
    const auto d = confined_detail::components(dir);
    for (auto part : p)
        if (part == "." || part == "..") return false;
    for (auto part : d)
        if (part == "." || part == "..") return false;
    if (p.size() <= d.size()) return false;
    for (std::size_t i = 0; i < d.size(); ++i)
        if (p[i] != d[i]) return false;
    return true;
}

inline std::string containing_dir(std::string_view path, const std::vector<std::string>& dirs) {
    for (const auto& dir : dirs)
        if (is_path_inside(path, dir)) return dir;
    return "";
}

inline std::string join_dirs(const std::vector<std::string>& dirs) {
    std::string out;
    for (const auto& dir : dirs) out += (out.empty() ? "" : ", ") + dir;
    return out.empty() ? "(none)" : out;
}

inline UniqueFd open_confined(const std::string& dir, const std::string& path, int flags, unsigned mode,
                              CreateDirs create_dirs) {
    if (!is_path_inside(path, dir)) confined_detail::fail(EACCES, path + " is not inside " + dir);
    auto parts = confined_detail::relative_parts(dir, path);
    const std::string leaf(parts.back());
    parts.pop_back();
    UniqueFd parent = confined_detail::walk(confined_detail::open_base(dir, create_dirs), parts, path, create_dirs);

    // O_NONBLOCK: opening a FIFO for reading must not hang the plugin; refused below anyway.
    UniqueFd fd(::openat(parent.get(), leaf.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode));
    if (!fd) {
        const int err = errno;
        if (err == ELOOP) confined_detail::fail(ELOOP, path + " is a symlink, which is not followed");
        // A FIFO without a reader refuses O_WRONLY|O_NONBLOCK with ENXIO: report it as not a file.
        if (err == ENXIO) confined_detail::fail(EINVAL, path + " is not a regular file");
        confined_detail::fail(err, "cannot open " + path);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) confined_detail::fail(errno, "cannot stat " + path);
    if (!S_ISREG(st.st_mode)) confined_detail::fail(EINVAL, path + " is not a regular file");
    const int fl = ::fcntl(fd.get(), F_GETFL);
    if (fl >= 0) ::fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

inline UniqueFd open_confined_dir(const std::string& dir, const std::string& path, CreateDirs create_dirs) {
    const bool same = confined_detail::components(dir) == confined_detail::components(path) &&
                      !confined_detail::components(path).empty();
    if (!same && !is_path_inside(path, dir)) confined_detail::fail(EACCES, path + " is not inside " + dir);
    UniqueFd base = confined_detail::open_base(dir, create_dirs);
    if (same) return base;
    return confined_detail::walk(std::move(base), confined_detail::relative_parts(dir, path), path, create_dirs);
}

inline std::string read_confined(const std::string& dir, const std::string& path, std::size_t limit) {
    const UniqueFd fd = open_confined(dir, path, O_RDONLY, 0);
    std::string out;
    char buf[8192];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            confined_detail::fail(errno, "cannot read " + path);
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > limit)
            confined_detail::fail(EFBIG, path + " is larger than " + std::to_string(limit) + " bytes");
    }
    return out;
}

}  // namespace rdmanet::base
