#pragma once
// libcurl, loaded with dlopen when the Kubernetes datastore is first used instead of linked:
// every other plugin exec (local datastore, delegated IPAM, DEL of a macvlan, VERSION ...) then
// skips loading libcurl and the ~30 libraries it pulls in (OpenSSL, nghttp2, Kerberos, LDAP ...),
// which cost more than the plugin's own work, and a node without libcurl4 still runs every mode;
// only the Kubernetes datastore then fails, with a message saying what to install.
// The types and constants still come from <curl/curl.h> (libcurl's ABI is stable: soname 4).
#include <string>

#include <curl/curl.h>

namespace rdmanet::ipam::kube {

struct CurlLibrary {
    decltype(&::curl_global_init) global_init = nullptr;
    decltype(&::curl_easy_init) easy_init = nullptr;
    decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
    decltype(&::curl_easy_setopt) easy_setopt = nullptr;
    decltype(&::curl_easy_perform) easy_perform = nullptr;
    decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
    decltype(&::curl_easy_strerror) easy_strerror = nullptr;
    decltype(&::curl_slist_append) slist_append = nullptr;
    decltype(&::curl_slist_free_all) slist_free_all = nullptr;
};

inline constexpr const char* kCurlSoname = "libcurl.so.4";

// libcurl.so.4, loaded (and curl_global_init'ed) once per process, thread-safe; never unloaded.
// Throws IpamError(io_failure) naming the library and the package to install when it cannot be
// loaded or lacks a symbol; the next call tries again.
const CurlLibrary& curl_library();

// The loading itself, for any soname (tests name a missing one). Not cached.
CurlLibrary load_curl_library(const std::string& soname);

}  // namespace rdmanet::ipam::kube
