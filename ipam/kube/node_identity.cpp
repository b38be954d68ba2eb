// Node identity: see node_identity.hpp.
#include "rdmanet/ipam/kube/node_identity.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>

#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::ipam::kube {

namespace {

std::string first_line_trimmed(std::string s) {
    if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
    while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
    std::size_t start = 0;
    while (start < s.size() && (s[start] == ' ' || s[start] == '\t')) ++start;
    return s.substr(start);
}

std::optional<std::string> read_small_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::string text(256, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

}  // namespace

std::string choose_node_name(std::optional<std::string> env_nodename, std::optional<std::string> nodename_file,
                             std::optional<std::string> hostname, std::string_view config_dir) {
    const std::string file = std::string(config_dir) + "/nodename";
    struct Source {
        std::optional<std::string> value;
        std::string where;
    };
    const Source sources[] = {{std::move(env_nodename), "$NODENAME"},
                              {std::move(nodename_file), file},
                              {std::move(hostname), "the host name"}};
    for (const auto& s : sources) {
        if (!s.value) continue;
        const std::string name = first_line_trimmed(*s.value);
        if (name.empty()) continue;
        if (!valid_node_name(name)) {
            config_error("node_slice_size needs this node's name, and " + s.where + " gives \"" + name +
                         "\", which is not a Kubernetes node name (lower-case letters, digits, '-' and '.'): set "
                         "$NODENAME or write the node's name into " +
                         file);
        }
        return name;
    }
    config_error("node_slice_size needs this node's name: set $NODENAME, or write the node's name into " + file +
                 " (rdmanetctl install does so from the pod's spec.nodeName)");
}

std::string resolve_node_name(const std::optional<std::string>& env_nodename, const std::string& config_dir) {
    std::optional<std::string> env;
    if (env_nodename && !env_nodename->empty()) env = env_nodename;
    std::optional<std::string> host = read_small_file("/etc/hostname");
    if (!host || first_line_trimmed(*host).empty()) {
        char buf[HOST_NAME_MAX + 1] = {};
        if (::gethostname(buf, sizeof buf - 1) == 0) host = std::string(buf);
    }
    return choose_node_name(env, env ? std::nullopt : read_small_file(config_dir + "/nodename"), host, config_dir);
}

bool valid_node_name(std::string_view n) {
    if (n.empty() || n.size() > 253) return false;
    for (char c : n) {
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
    }
    return n.front() != '-' && n.front() != '.' && n.back() != '-' && n.back() != '.';
}

}  // namespace rdmanet::ipam::kube
