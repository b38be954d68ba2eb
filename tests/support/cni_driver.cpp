#include "support/cni_driver.hpp"

#include <vector>

namespace rdmanet::test {
namespace {

CniOutcome to_outcome(ProcessResult&& r) {
    CniOutcome o;
    o.exit_code = r.exit_code;
    o.timed_out = r.timed_out;
    o.out = std::move(r.out);
    o.err = std::move(r.err);
    // Empty stdout is legal (CHECK, DEL); anything else must be JSON, which tests assert on.
    bool blank = o.out.find_first_not_of(" \t\r\n") == std::string::npos;
    o.json = blank ? nlohmann::json() : nlohmann::json::parse(o.out, nullptr, false);
    return o;
}

std::string string_field(const nlohmann::json& j, const char* key) {
    if (j.is_object() && j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
    return {};
}

}  // namespace

std::string rdmanet_path() { return bin_dir() + "/rdmanet"; }
std::string default_cni_path() { return bin_dir() + ":/usr/lib/cni"; }

int CniOutcome::code() const {
    if (json.is_object() && json.contains("code") && json["code"].is_number_integer()) return json["code"].get<int>();
    return -1;
}
std::string CniOutcome::msg() const { return string_field(json, "msg"); }
std::string CniOutcome::details() const { return string_field(json, "details"); }

std::string CniOutcome::describe() const {
    return "exit=" + std::to_string(exit_code) + (timed_out ? " (timed out)" : "") + "\nstdout: " + out +
           "\nstderr: " + err;
}

CniOutcome run_driver(const DriverRequest& req, const std::map<std::string, std::string>& env,
                      std::chrono::milliseconds timeout) {
    std::vector<std::string> argv = {bin_dir() + "/cni-driver", req.verb, req.single_plugin ? "--conf" : "--conflist",
                                     req.conflist, "--netns", req.netns, "--ifname", req.ifname, "--container-id",
                                     req.container_id, "--cni-path",
                                     req.cni_path.empty() ? default_cni_path() : req.cni_path,
                                     // The driver's own deadline sits inside ours so it reports first.
                                     "--timeout", std::to_string(timeout.count() * 9 / 10) + "ms"};
    if (!req.cap_args.empty()) argv.insert(argv.end(), {"--cap-args", req.cap_args});
    if (!req.args.empty()) argv.insert(argv.end(), {"--args", req.args});
    if (!req.cache_dir.empty()) argv.insert(argv.end(), {"--cache-dir", req.cache_dir});
    return to_outcome(run_process(argv, env, "", timeout));
}

CniOutcome invoke_plugin(const std::string& plugin_path, const PluginRequest& req,
                         const std::map<std::string, std::string>& env, std::chrono::milliseconds timeout) {
    auto full = current_environment();
    // Inherited CNI_* would make "variable missing" tests pass or fail by accident.
    for (auto it = full.begin(); it != full.end();)
        it = it->first.rfind("CNI_", 0) == 0 ? full.erase(it) : std::next(it);
    auto put = [&](const char* key, const std::optional<std::string>& value) {
        if (value) full[key] = *value;
    };
    put("CNI_COMMAND", req.command);
    put("CNI_CONTAINERID", req.container_id);
    put("CNI_NETNS", req.netns);
    put("CNI_IFNAME", req.ifname);
    put("CNI_ARGS", req.args);
    put("CNI_PATH", req.path);
    for (const auto& [k, v] : env) full[k] = v;
    return to_outcome(run_process_exact_env({plugin_path}, full, req.stdin_data, timeout));
}

}  // namespace rdmanet::test
