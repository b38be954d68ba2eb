#include "rdmanet/cni/protocol/env.hpp"

#include <cstdlib>

#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

namespace {

struct CommandName {
    Command command;
    std::string_view name;
};
constexpr CommandName kCommands[] = {
    {Command::add, "ADD"},         {Command::del, "DEL"},       {Command::check, "CHECK"},
    {Command::version, "VERSION"}, {Command::status, "STATUS"}, {Command::gc, "GC"},
};

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// Which variables each verb needs. Go skel's rules, which runtimes are tested against, except
// STATUS: libcni sends it with empty container/netns/ifname, and the spec makes CNI_PATH optional.
struct Needs {
    bool container_id_and_ifname = false;
    bool netns = false;
    bool path = false;
};
Needs needs_of(Command command) {
    switch (command) {
    case Command::add:
    case Command::check: return {true, true, true};
    case Command::del: return {true, false, true};
    case Command::gc: return {false, false, true};
    default: return {};
    }
}

std::vector<std::string> split_path(std::string_view list) {
    std::vector<std::string> dirs;
    while (!list.empty()) {
        auto colon = list.find(':');
        std::string_view dir = list.substr(0, colon);
        list = colon == std::string_view::npos ? std::string_view{} : list.substr(colon + 1);
        if (!dir.empty()) dirs.emplace_back(dir);
    }
    return dirs;
}

// The kernel's own rules for a device name (dev_valid_name): says which one `name` breaks.
std::string kernel_ifname_problem(std::string_view name) {
    if (name.empty()) return "it is empty";
    if (name.size() > 15) return "it is " + std::to_string(name.size()) + " characters long";
    if (name == "." || name == "..") return "it is a path component";
    for (unsigned char c : name) {
        if (c == '/') return "it contains '/'";
        if (c == ':') return "it contains ':'";
        if (c == ' ' || (c >= '\t' && c <= '\r')) return "it contains whitespace";
        if (c < 0x20 || c == 0x7f) return "it contains a control character";
    }
    return "";
}

}  // namespace

Command parse_command(std::string_view text) {
    for (const auto& entry : kCommands)
        if (entry.name == text) return entry.command;
    return Command::none;
}

std::string_view command_name(Command command) {
    for (const auto& entry : kCommands)
        if (entry.command == command) return entry.name;
    return "";
}

bool is_valid_container_id(std::string_view id) {
    if (id.empty() || !is_alnum(id.front())) return false;
    for (char c : id)
        if (!is_alnum(c) && c != '_' && c != '.' && c != '-') return false;
    return true;
}

std::string ifname_problem(std::string_view name) {
    if (auto problem = kernel_ifname_problem(name); !problem.empty()) return problem;
    // The kernel accepts a '%' but expands "%d" to the first free number when it creates or
    // renames the device, so the interface would not bear the name asked for.
    if (name.find('%') != std::string_view::npos)
        return "it contains '%', which the kernel expands as a name template (\"net%d\" becomes \"net0\")";
    return "";
}

bool is_valid_ifname(std::string_view name) { return ifname_problem(name).empty(); }

bool is_valid_network_name(std::string_view name) { return name.size() <= 253 && is_valid_container_id(name); }

EnvLookup process_env_lookup() {
    return [](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        if (!value) return std::nullopt;
        return std::string(value);
    };
}

Environment parse_environment(const EnvLookup& lookup) {
    auto get = [&](const char* name) { return lookup(name).value_or(""); };
    Environment env;

    // Like skel: an empty CNI_COMMAND is the same as none (the caller prints the about text).
    std::string command_text = get("CNI_COMMAND");
    if (command_text.empty()) return env;
    env.command = parse_command(command_text);
    if (env.command == Command::none)
        throw Error(ErrorCode::invalid_environment, "unknown CNI_COMMAND " + text::quote(command_text),
                    "expected one of ADD, DEL, CHECK, GC, STATUS, VERSION");

    env.container_id = get("CNI_CONTAINERID");
    env.netns = get("CNI_NETNS");
    env.ifname = get("CNI_IFNAME");
    env.cni_args_raw = get("CNI_ARGS");
    env.args = parse_cni_args(env.cni_args_raw);
    env.path = split_path(get("CNI_PATH"));
    if (auto nodename = lookup("NODENAME"); nodename && !nodename->empty()) env.nodename = std::move(nodename);

    const Needs needs = needs_of(env.command);
    // An empty container id is "container unknown" (code 3), not a missing variable, so only
    // an unset one is reported here; every other required variable must also be non-empty.
    std::vector<std::string> missing;
    if (needs.container_id_and_ifname && !lookup("CNI_CONTAINERID")) missing.push_back("CNI_CONTAINERID");
    if (needs.netns && env.netns.empty()) missing.push_back("CNI_NETNS");
    if (needs.container_id_and_ifname && env.ifname.empty()) missing.push_back("CNI_IFNAME");
    if (needs.path && env.path.empty()) missing.push_back("CNI_PATH");
    if (!missing.empty()) {
        std::string names;
        for (const auto& name : missing) names += (names.empty() ? "" : ",") + name;
        throw Error(ErrorCode::invalid_environment, "required env variables [" + names + "] missing", names);
    }

    if (needs.container_id_and_ifname) {
        if (env.container_id.empty())
            throw Error(ErrorCode::unknown_container, "CNI_CONTAINERID is empty",
                        "the runtime must name the container");
        if (!is_valid_container_id(env.container_id))
            throw Error(ErrorCode::invalid_environment,
                        "CNI_CONTAINERID " + text::quote(env.container_id) +
                            " is invalid: must start with a letter or digit and contain only "
                            "letters, digits, '_', '.' and '-'",
                        "CNI_CONTAINERID");
        // DEL only looks the name up, and no device can bear a '%' (the kernel expands it at
        // creation and rename): a DEL for such a name (one whose ADD was refused) finds nothing
        // of it and succeeds, so the runtime can tear the pod down.
        const auto problem =
            env.command == Command::del ? kernel_ifname_problem(env.ifname) : ifname_problem(env.ifname);
        if (!problem.empty())
            throw Error(ErrorCode::invalid_environment,
                        "CNI_IFNAME " + text::quote(env.ifname) + " is invalid: " + problem + " (" +
                            std::string(kIfnameRule) + ")",
                        "CNI_IFNAME: " + problem);
    }
    return env;
}

}  // namespace rdmanet::cni
