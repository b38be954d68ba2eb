#pragma once
// The CNI_* environment, validated as libcni/skel do it.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/cni/protocol/args.hpp"

namespace rdmanet::cni {

enum class Command { none, add, del, check, version, status, gc };

struct Environment {
    Command command = Command::none;
    std::string container_id;
    std::string netns;
    std::string ifname;
    std::string cni_args_raw;
    CniArgs args;
    std::vector<std::string> path;  // CNI_PATH split on ':', empty entries dropped
    // $NODENAME, which node this is (whereabouts' variable, for node-slice IPAM); not a CNI_*
    // variable, but read here with them so that nothing else reads the environment.
    std::optional<std::string> nodename;
};

using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup process_env_lookup();  // getenv-based

// Throws Error: code 4 naming the missing/invalid variables (skel's rules: CNI_PATH for
// ADD/CHECK/DEL/GC, CNI_NETNS for ADD/CHECK, CONTAINERID+IFNAME for ADD/CHECK/DEL; STATUS and
// VERSION need nothing but CNI_COMMAND), code 4 for an unknown CNI_COMMAND, a container id
// outside the charset or an unusable CNI_IFNAME; code 3 for a container id that is set but empty
// where one is required (unset is a missing variable, code 4).
// CNI_COMMAND unset or empty -> command none (caller prints the about text, exit 0).
Environment parse_environment(const EnvLookup& lookup);

Command parse_command(std::string_view text);  // none when unknown
std::string_view command_name(Command command);

// Identifier checks shared by env and config validation (they reach file paths and netlink).
bool is_valid_container_id(std::string_view id);  // ^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$
// Interface names (CNI_IFNAME and every name in a config that reaches netlink): the kernel's
// rules, plus no '%', which the kernel would expand as a name template.
inline constexpr std::string_view kIfnameRule =
    "an interface name is 1-15 bytes, not \".\" or \"..\", without '/', ':', '%', whitespace or control characters";
std::string ifname_problem(std::string_view name);  // which rule it breaks, "" when valid
bool is_valid_ifname(std::string_view name);
bool is_valid_network_name(std::string_view name);  // container-id charset, <= 253 chars

}  // namespace rdmanet::cni
