#pragma once
// Network namespace handles and a scope guard that enters a namespace and always returns.
#include <string>
#include <utility>

#include "rdmanet/base/fd.hpp"

namespace rdmanet::netns {

// What a CNI_NETNS path currently is. DEL treats everything but `ok` as "netns gone".
enum class NetnsStatus { ok, missing, not_nsfs };
NetnsStatus probe_netns(const std::string& path);

class NetNamespace {
public:
    // Opens a netns file (/run/netns/x, /proc/<pid>/ns/net, bind mount). Throws KernelError
    // (ENOENT when missing, EINVAL when the path is not an nsfs file).
    static NetNamespace open(const std::string& path);
    // The namespace of the calling thread.
    static NetNamespace current();

    int fd() const { return fd_.get(); }
    const std::string& path() const { return path_; }
    // True when both handles refer to the same kernel namespace (same nsfs inode).
    bool same_as(const NetNamespace& other) const;

private:
    NetNamespace(base::UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
    base::UniqueFd fd_;
    std::string path_;
};

// Enters `target` for the calling thread on construction and returns to the namespace it came
// from on destruction, even during stack unwinding. Failing to return is fatal (std::terminate):
// continuing in the wrong namespace would configure the wrong interfaces.
class NetnsGuard {
public:
    explicit NetnsGuard(const NetNamespace& target);
    ~NetnsGuard();
    NetnsGuard(const NetnsGuard&) = delete;
    NetnsGuard& operator=(const NetnsGuard&) = delete;

private:
    NetNamespace origin_;
};

// Runs `fn` inside `ns` (like containernetworking's ns.Do) and returns its result.
template <class Fn>
decltype(auto) in_netns(const NetNamespace& ns, Fn&& fn) {
    NetnsGuard guard(ns);
    return std::forward<Fn>(fn)();
}

}  // namespace rdmanet::netns
