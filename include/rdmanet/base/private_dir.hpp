#pragma once
// The one directory maker for node-private data (IPAM store, VF locks and records): mkdir -p in
// which every component this call creates is 0700, so no other user on the node ever sees a
// window with a wider mode.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace rdmanet::base {

// Creates `dir` and its missing parents (0700 each). Returns "" when `dir` is then a directory,
// else what went wrong, for the caller's error: "mkdir <path>: <reason>", "stat <dir>: <reason>"
// or "<dir> is not a directory". Existing components keep their mode.
inline std::string make_private_dir(const std::string& dir) {
    std::size_t pos = 0;
    while (pos != std::string::npos) {
        pos = dir.find('/', pos + 1);
        const std::string path = dir.substr(0, pos);
        if (path.empty()) continue;
        if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return "mkdir " + path + ": " + std::strerror(errno);
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return "stat " + dir + ": " + std::strerror(errno);
    if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
    return "";
}

}  // namespace rdmanet::base
