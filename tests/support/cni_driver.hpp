#pragma once
// Calling the plugin as the tests' "runtime": through bin/cni-driver (Debian's libcni, the real
// caller) or directly with a hand-made CNI environment for what libcni 1.1.2 cannot send
// (VERSION, GC, STATUS, missing variables, malformed stdin, cniVersion 1.1.0).
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "support/build_paths.hpp"
#include "support/process.hpp"

namespace rdmanet::test {

// Plugin search path for the tests: our binaries first, then Debian's reference plugins
// (host-local, macvlan, host-device).
std::string default_cni_path();

struct CniOutcome {
    int exit_code = -1;
    nlohmann::json json;   // parsed stdout; null when stdout is empty, discarded if not JSON
    std::string out, err;  // raw stdout/stderr, for failure messages
    bool timed_out = false;

    bool ok() const { return exit_code == 0; }
    bool stdout_is_json() const { return !json.is_discarded(); }
    // Error fields (valid when stdout is an error object).
    int code() const;
    std::string msg() const;
    std::string details() const;
    // One line for INFO/FAIL messages: exit code, stdout, stderr.
    std::string describe() const;
};

// One libcni call. Empty strings are passed through as empty flags so that tests can probe
// libcni's own validation (an empty netns on DEL, say).
struct DriverRequest {
    std::string verb;            // add | check | del
    std::string conflist;        // path of the conflist file
    bool single_plugin = false;  // `conflist` names ONE plugin configuration: AddNetwork, not AddNetworkList
    std::string netns;
    std::string ifname = "net1";
    std::string container_id;
    std::string cni_path;   // default_cni_path() when empty
    std::string cap_args;   // JSON object, optional
    std::string args;       // K=V;K=V, optional
    std::string cache_dir;  // libcni result cache; tests always pass a temp dir
};

// Runs bin/cni-driver; `env` is added to the driver's environment and libcni passes it on to the
// plugin (RDMANET_POLICY_FILE, for instance).
CniOutcome run_driver(const DriverRequest& request, const std::map<std::string, std::string>& env = {},
                      std::chrono::milliseconds timeout = std::chrono::seconds(60));

// A direct plugin call. Every CNI_* variable that is nullopt is absent from the environment;
// the rest of the environment is the test's own minus any CNI_* variable, plus `env`.
struct PluginRequest {
    std::optional<std::string> command;
    std::optional<std::string> container_id;
    std::optional<std::string> netns;
    std::optional<std::string> ifname;
    std::optional<std::string> args;
    std::optional<std::string> path;
    std::string stdin_data;
};

CniOutcome invoke_plugin(const std::string& plugin_path, const PluginRequest& request,
                         const std::map<std::string, std::string>& env = {},
                         std::chrono::milliseconds timeout = std::chrono::seconds(60));

// <bin_dir>/rdmanet.
std::string rdmanet_path();

}  // namespace rdmanet::test
