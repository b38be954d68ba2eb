#include "rdmanet/cni/protocol/exec_plugin.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <system_error>

#include "child_process.hpp"
#include "rdmanet/cni/protocol/value_checks.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/protocol/json.hpp"
#include "rdmanet/cni/protocol/text.hpp"

extern char** environ;

namespace rdmanet::cni {

namespace {

constexpr std::size_t kMessageExcerpt = 2000;  // stderr/stdout quoted in an error, at most

std::string plugin_label(const std::string& type, Command command) {
    return "plugin " + text::quote(type) + " (" + std::string(command_name(command)) + ")";
}

std::string find_in_path(const std::string& type, const Environment& env) {
    if (!checks::is_plain_file_name(type))
        throw Error(ErrorCode::invalid_config,
                    "plugin type " + text::quote(type) + " must be a plain file name in CNI_PATH");
    std::string searched;
    for (const auto& dir : env.path) {
        std::string candidate = dir + "/" + type;
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        searched += (searched.empty() ? "" : " ") + dir;
    }
    throw Error(ErrorCode::invalid_config, "failed to find plugin " + text::quote(type) + " in path [" + searched + "]",
                "install it in one of the CNI_PATH directories");
}

// The caller's environment with the CNI_* variables of this call, as libcni's invoke does it.
std::vector<std::string> child_environment(Command command, const Environment& env) {
    std::string path;
    for (const auto& dir : env.path) path += (path.empty() ? "" : ":") + dir;
    const std::pair<std::string_view, std::string> ours[] = {
        {"CNI_COMMAND", std::string(command_name(command))},
        {"CNI_CONTAINERID", env.container_id},
        {"CNI_NETNS", env.netns},
        {"CNI_IFNAME", env.ifname},
        {"CNI_ARGS", env.cni_args_raw},
        {"CNI_PATH", path},
    };
    std::vector<std::string> entries;
    for (char** entry = environ; entry && *entry; ++entry) {
        std::string_view text(*entry);
        std::string_view name = text.substr(0, text.find('='));
        bool replaced = false;
        for (const auto& [our_name, value] : ours) replaced = replaced || name == our_name;
        if (!replaced) entries.emplace_back(text);
    }
    for (const auto& [name, value] : ours) entries.push_back(std::string(name) + "=" + value);
    return entries;
}

std::string excerpt(std::string_view text) {
    text = text::trim(text);
    if (text.size() <= kMessageExcerpt) return std::string(text);
    return std::string(text.substr(0, kMessageExcerpt)) + "...";
}

// A CNI error object as the spec prints it: integer code > 0 and a string msg.
std::optional<Error> cni_error_in(const std::string& out) {
    try {
        auto j = parse_json_bounded(out);
        if (!j.is_object()) return std::nullopt;
        auto code = j.find("code"), msg = j.find("msg");
        if (code == j.end() || msg == j.end() || !code->is_number_integer() || !msg->is_string()) return std::nullopt;
        int value = code->get<int>();
        if (value <= 0) return std::nullopt;
        std::string details;
        if (auto d = j.find("details"); d != j.end() && d->is_string()) details = d->get<std::string>();
        return Error(value, msg->get<std::string>(), details);
    } catch (const Error&) {
        return std::nullopt;
    }
}

}  // namespace

nlohmann::json exec_plugin(const std::string& type, Command command, const Environment& env,
                           const nlohmann::json& config, std::chrono::milliseconds timeout) {
    ChildSpec spec;
    spec.path = find_in_path(type, env);
    spec.env = child_environment(command, env);
    spec.input = config.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    spec.timeout = timeout;

    ChildOutcome outcome;
    try {
        outcome = run_child(spec);
    } catch (const std::system_error& e) {
        throw Error(ErrorCode::ipam_failure,
                    "cannot run " + plugin_label(type, command) + " from " + spec.path + ": " + e.what());
    }
    const std::string label = plugin_label(type, command);
    if (outcome.timed_out)
        throw Error(ErrorCode::timeout,
                    label + " did not finish within " + std::to_string(timeout.count()) + " ms and was killed",
                    excerpt(outcome.err));
    if (outcome.out_truncated)
        throw Error(ErrorCode::ipam_failure,
                    label + " printed more than " + std::to_string(spec.max_stdout) + " bytes");

    if (!outcome.succeeded()) {
        // Per the spec a failing plugin prints its error on stdout; pass it through unchanged.
        if (auto error = cni_error_in(outcome.out)) throw *error;
        std::string stderr_text = excerpt(outcome.err);
        throw Error(ErrorCode::ipam_failure,
                    label + " failed (" + outcome.describe_end() + ")" +
                        (stderr_text.empty() ? std::string(" without an error message") : ": " + stderr_text),
                    outcome.out.empty() ? "" : "stdout: " + excerpt(outcome.out));
    }
    if (text::trim(outcome.out).empty()) return nullptr;  // DEL/CHECK may print nothing
    try {
        return parse_json_bounded(outcome.out);
    } catch (const Error& e) {
        throw Error(ErrorCode::ipam_failure, label + " printed output that is not JSON: " + e.msg(),
                    "stdout: " + excerpt(outcome.out));
    }
}

}  // namespace rdmanet::cni
