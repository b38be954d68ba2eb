// Loading libcurl at first use: see curl_library.hpp.
#include "curl_library.hpp"

#include <dlfcn.h>

#include <memory>
#include <mutex>

#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::ipam::kube {

namespace {

[[noreturn]] void missing(const std::string& soname, const std::string& why) {
    throw IpamError(codes::io_failure,
                    "the Kubernetes datastore needs libcurl, and " + soname + " cannot be loaded (" + why +
                        "): install it on the node (Debian/Ubuntu: apt-get install libcurl4; RHEL/Fedora: "
                        "dnf install libcurl), or use \"datastore\": \"local\"");
}

template <typename Fn>
void bind(void* handle, const std::string& soname, const char* name, Fn& slot) {
    void* symbol = ::dlsym(handle, name);
    if (!symbol) missing(soname, std::string("no symbol ") + name);
    slot = reinterpret_cast<Fn>(symbol);
}

}  // namespace

CurlLibrary load_curl_library(const std::string& soname) {
    // RTLD_LOCAL: libcurl's own dependencies stay out of the plugin's symbol namespace.
    void* handle = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* err = ::dlerror();
        missing(soname, err ? err : "dlopen failed");
    }
    CurlLibrary lib;
    bind(handle, soname, "curl_global_init", lib.global_init);
    bind(handle, soname, "curl_easy_init", lib.easy_init);
    bind(handle, soname, "curl_easy_cleanup", lib.easy_cleanup);
    bind(handle, soname, "curl_easy_setopt", lib.easy_setopt);
    bind(handle, soname, "curl_easy_perform", lib.easy_perform);
    bind(handle, soname, "curl_easy_getinfo", lib.easy_getinfo);
    bind(handle, soname, "curl_easy_strerror", lib.easy_strerror);
    bind(handle, soname, "curl_slist_append", lib.slist_append);
    bind(handle, soname, "curl_slist_free_all", lib.slist_free_all);
    return lib;   // the handle stays open for the life of the process, on purpose
}

const CurlLibrary& curl_library() {
    static std::mutex mu;
    static std::unique_ptr<CurlLibrary> loaded;
    std::lock_guard lock(mu);
    if (!loaded) {
        auto lib = std::make_unique<CurlLibrary>(load_curl_library(kCurlSoname));
        if (lib->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) missing(kCurlSoname, "curl_global_init failed");
        loaded = std::move(lib);
    }
    return *loaded;
}

}  // namespace rdmanet::ipam::kube
