#include "e2e/e2e_helpers.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "support/process.hpp"

namespace rdmanet::test::e2e {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> ip_argv(const ScopedNetns* ns, std::vector<std::string> args) {
    std::vector<std::string> argv{"ip"};
    if (ns) argv.insert(argv.end(), {"-n", ns->name()});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

// iproute2 JSON output of `args`; throws when ip fails or prints something else.
json ip_json(const ScopedNetns* ns, std::vector<std::string> args) {
    args.insert(args.begin(), "-j");
    ProcessResult r = run_process(ip_argv(ns, args));
    if (r.exit_code != 0) throw std::runtime_error("ip failed: " + r.err);
    json j = json::parse(r.out, nullptr, false);
    if (j.is_discarded()) throw std::runtime_error("ip printed no JSON: " + r.out);
    return j;
}

std::string string_or_empty(const json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

bool looks_like_ip(const std::string& name) {
    return name.find_first_not_of("0123456789.") == std::string::npos ||
           (name.find(':') != std::string::npos && name.find_first_not_of("0123456789abcdef:") == std::string::npos);
}

}  // namespace

Workspace::Workspace() {
    std::string templ = (fs::temp_directory_path() / "rdmanet-e2e.XXXXXX").string();
    if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
    root_ = templ;
    // Everything a network config may name (logFile, data_dir, ...) lives in the workspace.
    const std::vector<std::string> here{root_.string()};
    write("policy.json", json{{"logDir", root_.string()},
                              {"auditLog", audit_log()},
                              {"ipamDataDirs", here},
                              {"ipamConfigDirs", here},
                              {"kubeconfigDirs", here},
                              {"deviceInfoDirs", {path("devinfo")}},
                              {"stateDir", state_dir()}}
                             .dump());
}

Workspace::~Workspace() {
    std::error_code ec;
    fs::remove_all(root_, ec);
}

std::string Workspace::write(const std::string& name, const std::string& content) const {
    const std::string file = path(name);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << content;
    return file;
}

std::vector<std::string> Workspace::state_files() const {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(state_dir(), ec))
        if (entry.is_regular_file()) files.push_back(entry.path().filename().string());
    return files;
}

std::vector<std::string> Workspace::ipam_reservations(const std::string& network) const {
    std::vector<std::string> ips;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(ipam_dir()) / network, ec)) {
        const std::string name = entry.path().filename().string();
        if (looks_like_ip(name)) ips.push_back(name);
    }
    std::sort(ips.begin(), ips.end());
    return ips;
}

json embedded_ipam(const Workspace& ws, const std::string& range, const std::string& gateway) {
    return {{"type", "rdmanet-ipam"}, {"range", range}, {"gateway", gateway}, {"data_dir", ws.path("rdmanet-ipam")}};
}

json embedded_pools(const Workspace& ws) {
    const auto r =
        run_process({bin_dir() + "/rdmanetctl", "pool", "list", "--json", "--data-dir", ws.path("rdmanet-ipam")});
    json j = json::parse(r.out, nullptr, false);
    if (r.exit_code != 0 || !j.is_array())
        throw std::runtime_error("rdmanetctl pool list: exit " + std::to_string(r.exit_code) + " " + r.out + r.err);
    return j;
}

json host_local(const Workspace& ws, const std::string& subnet, const json& extra) {
    json ipam = {{"type", "host-local"}, {"subnet", subnet}, {"dataDir", ws.ipam_dir()}};
    ipam.update(extra);
    return ipam;
}

json macvlan_plugin(const std::string& master, const json& ipam) {
    return {{"type", "rdmanet"},       {"mode", "macvlan"}, {"master", master},
            {"macvlanMode", "bridge"}, {"mtu", 0},          {"ipam", ipam}};
}

json hostdev_plugin(const std::string& device, const json& ipam) {
    return {{"type", "rdmanet"}, {"mode", "hostdev"}, {"device", device}, {"ipam", ipam}};
}

json conflist(const std::string& name, const std::string& version, const json& plugin) {
    return {{"cniVersion", version}, {"name", name}, {"plugins", json::array({plugin})}};
}

json plugin_stdin(const std::string& name, const std::string& version, const json& plugin) {
    json conf = plugin;
    conf["name"] = name;
    conf["cniVersion"] = version;
    return conf;
}

std::string container_id(const std::string& prefix) { return unique_name(prefix + "-"); }

CniOutcome Attachment::call(const std::string& verb) const {
    DriverRequest req;
    req.verb = verb;
    req.conflist = conflist_path;
    req.netns = netns_path;
    req.ifname = ifname;
    req.container_id = container_id;
    req.cache_dir = ws.cache_dir();
    return run_driver(req, ws.env());
}

CniOutcome direct(const Workspace& ws, const std::string& command, const std::string& netns, const std::string& id,
                  const std::string& ifname, const json& stdin_conf) {
    PluginRequest req;
    req.command = command;
    req.container_id = id;
    req.netns = netns;
    req.ifname = ifname;
    req.args = "";
    req.path = default_cni_path();
    req.stdin_data = stdin_conf.dump();
    return invoke_plugin(rdmanet_path(), req, ws.env());
}

std::optional<json> find_link(const ScopedNetns* ns, const std::string& ifname) {
    ProcessResult r = run_process(ip_argv(ns, {"-j", "-d", "link", "show", "dev", ifname}));
    if (r.exit_code != 0) return std::nullopt;  // "Device ... does not exist"
    json j = json::parse(r.out, nullptr, false);
    if (!j.is_array() || j.empty()) return std::nullopt;
    return j[0];
}

std::vector<std::string> link_names(const ScopedNetns* ns) {
    std::vector<std::string> names;
    for (const auto& link : ip_json(ns, {"link", "show"})) names.push_back(string_or_empty(link, "ifname"));
    std::sort(names.begin(), names.end());
    return names;
}

std::vector<std::string> host_links_on(const std::string& master) {
    std::vector<std::string> names;
    for (const auto& link : ip_json(nullptr, {"link", "show"}))
        if (string_or_empty(link, "link") == master) names.push_back(string_or_empty(link, "ifname"));
    std::sort(names.begin(), names.end());
    return names;
}

std::vector<std::string> ipv4_addresses(const ScopedNetns& ns, const std::string& ifname) {
    std::vector<std::string> out;
    for (const auto& link : ip_json(&ns, {"-4", "addr", "show", "dev", ifname}))
        for (const auto& a : link.value("addr_info", json::array()))
            out.push_back(string_or_empty(a, "local") + "/" + std::to_string(a.value("prefixlen", 0)));
    return out;
}

std::string link_alias(const json& link) { return string_or_empty(link, "ifalias"); }
std::string link_mac(const json& link) { return string_or_empty(link, "address"); }

bool link_is_up(const json& link) {
    const auto flags = link.value("flags", json::array());
    return std::find(flags.begin(), flags.end(), "UP") != flags.end();
}

std::string link_kind(const json& link) {
    if (!link.contains("linkinfo")) return {};
    return string_or_empty(link["linkinfo"], "info_kind");
}

void set_link_up(const ScopedNetns* ns, const std::string& ifname) {
    ProcessResult r = run_process(ip_argv(ns, {"link", "set", "dev", ifname, "up"}));
    if (r.exit_code != 0) throw std::runtime_error("ip link set " + ifname + " up: " + r.err);
}

bool only_loopback(const ScopedNetns& ns) { return link_names(&ns) == std::vector<std::string>{"lo"}; }

bool pod_ping(const ScopedNetns& from, const std::string& ip) {
    const bool have_ping = run_process({"sh", "-c", "command -v ping"}).exit_code == 0;
    std::vector<std::string> argv{"ip", "netns", "exec", from.name()};
    if (have_ping) {
        argv.insert(argv.end(), {"ping", "-c1", "-W2", ip});
    } else {
        argv.insert(argv.end(),
                    {"perl", "-MNet::Ping", "-e", "exit(Net::Ping->new('icmp', 2)->ping($ARGV[0]) ? 0 : 1)", ip});
    }
    return run_process(argv, {}, "", std::chrono::seconds(10)).exit_code == 0;
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

std::string address_of(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

}  // namespace rdmanet::test::e2e
