#pragma once
// Finding a real peer (kube-apiserver, etcd, whereabouts, Multus, cnitool, the reference CNI
// plugins, Helm, ...) for a test. tests/peers/build_peers.sh builds each from its pinned Go module
// into a folder of its own, and `. tests/peers/peer_env.sh` exports that folder as
// RDMANET_PEER_<NAME>: the peer's name upper-cased, '-' and '.' as '_' (cni-plugins ->
// RDMANET_PEER_CNI_PLUGINS, kube-1.37 -> RDMANET_PEER_KUBE_1_37).
//
//   const std::string multus = rdmanet::test::require_peer("multus", "multus-shim");
//
// A missing peer never passes a test: with CI set in the environment (CI sets CI=true) the test
// fails, naming the peer and the command that builds it (an exception: Catch2 fails the case);
// without CI it prints `SKIPPED: <why>` and ends the process with exit code 77, which ctest
// counts as skipped (SKIP_RETURN_CODE 77), as support/skip.hpp and the real kube-apiserver suite
// (apiserver/real_apiserver.hpp) do. A variable that names a folder without the binary asked for
// is a broken setup, and fails everywhere.
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <unistd.h>

#include "support/skip.hpp"

namespace rdmanet::test {

// "cni-plugins" -> "RDMANET_PEER_CNI_PLUGINS".
inline std::string peer_env_name(std::string_view peer) {
    std::string name = "RDMANET_PEER_";
    for (const char c : peer) {
        if (c == '-' || c == '.')
            name += '_';
        else if (c >= 'a' && c <= 'z')
            name += static_cast<char>(c - 'a' + 'A');
        else
            name += c;
    }
    return name;
}

// The peer's folder from the environment, or std::nullopt when its variable is unset or empty.
inline std::optional<std::string> find_peer(std::string_view peer) {
    const char* dir = std::getenv(peer_env_name(peer).c_str());
    if (dir == nullptr || *dir == '\0') return std::nullopt;
    return std::string(dir);
}

inline bool running_under_ci() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && *ci != '\0';
}

// The peer's folder; `binary`, when given, must be an executable in it. See the top of the file
// for what happens when the peer is missing.
inline std::string require_peer(std::string_view peer, std::string_view binary = {}) {
    const std::string var = peer_env_name(peer);
    const auto dir = find_peer(peer);
    if (!dir) {
        const std::string why = "the real peer '" + std::string(peer) + "' is missing: " + var +
                                " is not set (build it with tests/peers/build_peers.sh " + std::string(peer) +
                                ", then `. tests/peers/peer_env.sh`)";
        if (running_under_ci()) throw std::runtime_error(why + "; CI runs every peer's tests");
        skip_test(why);
    }
    if (!binary.empty()) {
        const std::string path = *dir + "/" + std::string(binary);
        if (::access(path.c_str(), X_OK) != 0)
            throw std::runtime_error(var + "=" + *dir + " has no executable " + std::string(binary) +
                                     " (rebuild it with tests/peers/build_peers.sh " + std::string(peer) + ")");
    }
    return *dir;
}

}  // namespace rdmanet::test
