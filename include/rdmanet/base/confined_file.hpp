#pragma once
// Files named by a network configuration (whose author is not the node admin) are opened only
// inside directories the node admin allowed, and without following symlinks below them: every
// component under the allowed directory is opened with O_NOFOLLOW relative to its parent's fd,
// so a symlink planted (or swapped in) anywhere below the allowed directory is refused instead of
// followed. The allowed directory itself is the admin's and is resolved normally.
//
// In the base room because both the IPAM (configuration_path, kubeconfig, data_dir, log_file) and
// the cni rooms (logFile, state dir, the node policy, the device-info file) use it.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/base/fd.hpp"

namespace rdmanet::base {

// Lexical containment, no file system access: `path` is absolute, has no "." or ".." component
// and lies strictly below `dir` (dir itself does not count). Repeated slashes are tolerated.
bool is_path_inside(std::string_view path, std::string_view dir);
// The first of `dirs` that contains `path`, "" when none.
std::string containing_dir(std::string_view path, const std::vector<std::string>& dirs);
// "/a, /b" for error messages.
std::string join_dirs(const std::vector<std::string>& dirs);

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
UniqueFd open_confined(const std::string& dir, const std::string& path, int flags, unsigned mode,
                              CreateDirs create_dirs = CreateDirs::no);

// Opens (creating 0700 as needed) the directory `path` below `dir` the same way; returns an
// O_DIRECTORY fd. path == dir is allowed here (the directory itself).
UniqueFd open_confined_dir(const std::string& dir, const std::string& path, CreateDirs create_dirs);

// Reads a whole regular file opened by open_confined(dir, path, O_RDONLY); at most `limit` bytes
// (ConfinedFileError EFBIG past it).
std::string read_confined(const std::string& dir, const std::string& path, std::size_t limit = 1 << 20);

}  // namespace rdmanet::base
