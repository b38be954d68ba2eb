// Opening files below an allowed directory without following symlinks (see confined_file.hpp).
#include "rdmanet/base/confined_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rdmanet::base {

namespace {

// Splits "/a//b/c" into {"a","b","c"}.
std::vector<std::string_view> components(std::string_view path) {
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

bool has_control_character(std::string_view text) {
    for (unsigned char c : text)
        if (c < 0x20 || c == 0x7f) return true;
    return false;
}

[[noreturn]] void fail(int err, const std::string& what) {
    throw ConfinedFileError(err, what + ": " + std::strerror(err));
}

UniqueFd open_base(const std::string& dir, CreateDirs create_dirs) {
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
UniqueFd walk(UniqueFd base, const std::vector<std::string_view>& parts, const std::string& path,
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
            struct stat st{};
            if (::fstatat(current.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                fail(ELOOP, "component \"" + name + "\" of " + path + " is a symlink, which is not followed");
            fail(err, "cannot open directory component \"" + name + "\" of " + path);
        }
        current = std::move(next);
    }
    return current;
}

std::vector<std::string_view> relative_parts(const std::string& dir, const std::string& path) {
    auto all = components(path);
    const auto base = components(dir);
    return {all.begin() + static_cast<std::ptrdiff_t>(base.size()), all.end()};
}

}  // namespace

bool is_path_inside(std::string_view path, std::string_view dir) {
    if (path.empty() || path.front() != '/' || dir.empty() || dir.front() != '/') return false;
    if (has_control_character(path)) return false;
    const auto p = components(path);
    const auto d = components(dir);
    for (auto part : p)
        if (part == "." || part == "..") return false;
    for (auto part : d)
        if (part == "." || part == "..") return false;
    if (p.size() <= d.size()) return false;
    for (std::size_t i = 0; i < d.size(); ++i)
        if (p[i] != d[i]) return false;
    return true;
}

std::string containing_dir(std::string_view path, const std::vector<std::string>& dirs) {
    for (const auto& dir : dirs)
        if (is_path_inside(path, dir)) return dir;
    return "";
}

std::string join_dirs(const std::vector<std::string>& dirs) {
    std::string out;
    for (const auto& dir : dirs) out += (out.empty() ? "" : ", ") + dir;
    return out.empty() ? "(none)" : out;
}

UniqueFd open_confined(const std::string& dir, const std::string& path, int flags, unsigned mode,
                       CreateDirs create_dirs) {
    if (!is_path_inside(path, dir)) fail(EACCES, path + " is not inside " + dir);
    auto parts = relative_parts(dir, path);
    const std::string leaf(parts.back());
    parts.pop_back();
    UniqueFd parent = walk(open_base(dir, create_dirs), parts, path, create_dirs);

    // O_NONBLOCK: opening a FIFO for reading must not hang the plugin; refused below anyway.
    UniqueFd fd(::openat(parent.get(), leaf.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode));
    if (!fd) {
        const int err = errno;
        if (err == ELOOP) fail(ELOOP, path + " is a symlink, which is not followed");
        // A FIFO without a reader refuses O_WRONLY|O_NONBLOCK with ENXIO: report it as not a file.
        if (err == ENXIO) fail(EINVAL, path + " is not a regular file");
        fail(err, "cannot open " + path);
    }
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0) fail(errno, "cannot stat " + path);
    if (!S_ISREG(st.st_mode)) fail(EINVAL, path + " is not a regular file");
    const int fl = ::fcntl(fd.get(), F_GETFL);
    if (fl >= 0) ::fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

UniqueFd open_confined_dir(const std::string& dir, const std::string& path, CreateDirs create_dirs) {
    const bool same = components(dir) == components(path) && !components(path).empty();
    if (!same && !is_path_inside(path, dir)) fail(EACCES, path + " is not inside " + dir);
    UniqueFd base = open_base(dir, create_dirs);
    if (same) return base;
    return walk(std::move(base), relative_parts(dir, path), path, create_dirs);
}

std::string read_confined(const std::string& dir, const std::string& path, std::size_t limit) {
    const UniqueFd fd = open_confined(dir, path, O_RDONLY, 0);
    std::string out;
    char buf[8192];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(errno, "cannot read " + path);
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > limit) fail(EFBIG, path + " is larger than " + std::to_string(limit) + " bytes");
    }
    return out;
}

}  // namespace rdmanet::base
