// kubeconfig and in-cluster configuration: see kubeconfig.hpp.
#include "rdmanet/ipam/kube/kubeconfig.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "rdmanet/base/confined_file.hpp"
#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/kube/base64.hpp"
#include "rdmanet/ipam/kube/http_wire.hpp"
#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::ipam::kube {

namespace {

// A token goes into the Authorization header as it is: a CR or LF in it would end that header and
// start another (header injection), so it is refused where it is read, naming where it came from.
constexpr const char* kUnsafeToken =
    "contains a control character (CR, LF, ...) after trimming: a bearer token is "
    "one line of printable text; refused so that it cannot end the Authorization header";

// The namespace goes into every request's path: a Kubernetes namespace name (an RFC 1123 label).
bool namespace_name(std::string_view ns) {
    if (ns.empty() || ns.size() > 63 || ns.front() == '-' || ns.back() == '-') return false;
    return std::all_of(ns.begin(), ns.end(),
                       [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}
constexpr const char* kBadNamespace = "is not a namespace name (lower-case letters, digits and '-', at most 63)";

std::string trim_yaml_space(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
    std::size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    return s.substr(i);
}

class Parser {
public:
    Parser(const std::string& source_path, const FileReader& files)
        : path_(source_path), files_(files), dir_(std::filesystem::path(source_path).parent_path().string()) {}

    KubeConfig parse(std::string_view text) {
        YAML::Node root;
        try {
            root = YAML::Load(std::string(text));
        } catch (const YAML::Exception& e) {
            fail("is not valid YAML: " + std::string(e.what()));
        }
        if (!root.IsMap()) fail("is not a kubeconfig (expected a YAML mapping with clusters, users, contexts)");

        const std::string current = scalar(root, "current-context", "current-context");
        if (current.empty()) fail("has no current-context");
        YAML::Node context = named(root, "contexts", current, "context");
        const std::string cluster_name = scalar(context, "cluster", "context \"" + current + "\" cluster");
        const std::string user_name = scalar(context, "user", "context \"" + current + "\" user");
        if (cluster_name.empty()) fail("context \"" + current + "\" names no cluster");

        KubeConfig c;
        c.source = "kubeconfig " + path_;
        const std::string ns = scalar(context, "namespace", "context \"" + current + "\" namespace");
        if (!ns.empty() && !namespace_name(ns)) fail("context \"" + current + "\" namespace " + kBadNamespace);
        if (!ns.empty()) c.namespace_ = ns;

        YAML::Node cluster = named(root, "clusters", cluster_name, "cluster");
        const std::string where = "cluster \"" + cluster_name + "\"";
        c.server = scalar(cluster, "server", where + " server");
        while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
        if (c.server.empty()) fail(where + " has no server");
        if (!header_value_safe(c.server))
            fail(where +
                 " server contains a control character (CR, LF, ...): refused, it "
                 "would reach the Host header and the request line");
        if (c.server.rfind("https://", 0) != 0 && c.server.rfind("http://", 0) != 0) {
            fail(where + " server \"" + c.server + "\" must be an https:// URL");
        }
        c.ca_pem = data_or_file(cluster, "certificate-authority-data", "certificate-authority", where);
        const std::string insecure = scalar(cluster, "insecure-skip-tls-verify", where + " insecure-skip-tls-verify");
        c.insecure_skip_tls_verify = insecure == "true";

        if (!user_name.empty()) {
            YAML::Node user = named(root, "users", user_name, "user");
            const std::string uw = "user \"" + user_name + "\"";
            for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
                if (user[unsupported])
                    fail(uw + " uses \"" + unsupported +
                         "\", which rdmanet does not support: use a "
                         "token, tokenFile or a client certificate");
            }
            c.token = trim_yaml_space(scalar(user, "token", uw + " token"));
            if (!header_value_safe(c.token)) fail(uw + " token " + kUnsafeToken);
            const std::string token_file = scalar(user, "tokenFile", uw + " tokenFile");
            if (c.token.empty() && !token_file.empty()) {
                c.token = trim_yaml_space(files_.read(resolve(token_file), uw + " tokenFile"));
                if (!header_value_safe(c.token)) fail(uw + " tokenFile " + resolve(token_file) + " " + kUnsafeToken);
            }
            c.client_cert_pem = data_or_file(user, "client-certificate-data", "client-certificate", uw);
            c.client_key_pem = data_or_file(user, "client-key-data", "client-key", uw);
            if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
                fail(uw + " has a client certificate without its key (or a key without its certificate)");
            }
        }
        return c;
    }

private:
    [[noreturn]] void fail(const std::string& what) const { config_error("kubeconfig " + path_ + " " + what); }

    std::string scalar(const YAML::Node& map, const char* key, const std::string& what) const {
        YAML::Node n = map[key];
        if (!n || n.IsNull()) return {};
        if (!n.IsScalar()) fail(what + " must be a string");
        return n.as<std::string>();
    }

    // clusters/users/contexts: [{name: X, cluster|user|context: {...}}]
    YAML::Node named(const YAML::Node& root, const char* list, const std::string& name, const char* kind) const {
        YAML::Node items = root[list];
        if (items && items.IsSequence()) {
            for (const auto& item : items) {
                if (!item.IsMap() || !item["name"] || !item["name"].IsScalar()) continue;
                if (item["name"].as<std::string>() != name) continue;
                YAML::Node body = item[kind];
                if (!body || body.IsNull()) return YAML::Node(YAML::NodeType::Map);
                if (!body.IsMap()) fail(std::string(kind) + " \"" + name + "\" must be a mapping");
                return body;
            }
        }
        fail("has no " + std::string(kind) + " named \"" + name + "\" (in " + list + ")");
    }

    std::string resolve(const std::string& file) const {
        if (file.empty() || file.front() == '/' || dir_.empty()) return file;
        return dir_ + "/" + file;
    }

    std::string data_or_file(const YAML::Node& map, const char* data_key, const char* file_key,
                             const std::string& where) const {
        const std::string data = scalar(map, data_key, where + " " + data_key);
        if (!data.empty()) {
            auto decoded = base64_decode(data);
            if (!decoded || decoded->empty()) fail(where + " " + data_key + " is not valid base64");
            return *decoded;
        }
        const std::string file = scalar(map, file_key, where + " " + file_key);
        if (file.empty()) return {};
        return files_.read(resolve(file), where + " " + file_key);
    }

    std::string path_;
    const FileReader& files_;
    std::string dir_;
};

std::optional<std::string> read_optional(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

std::string FileReader::read(const std::string& path, const std::string& what) const {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        config_error(what + ": " + path + " does not exist or is not a regular file");
    }
    auto text = read_optional(path);
    if (!text) config_error(what + ": cannot read " + path);
    return *text;
}

KubeConfig parse_kubeconfig(std::string_view yaml_text, const std::string& source_path, const FileReader& files) {
    return Parser(source_path, files).parse(yaml_text);
}

namespace {

// The node policy's reading of a kubeconfig and the files it names: only below the allowed
// directories, never through a symlink (confined_file.hpp).
class ConfinedReader : public FileReader {
public:
    ConfinedReader(const std::vector<std::string>& dirs, const std::function<void(const std::string&)>& on_refusal)
        : dirs_(dirs), on_refusal_(on_refusal) {}

    std::string read(const std::string& path, const std::string& what) const override {
        const std::string dir = base::containing_dir(path, dirs_);
        if (dir.empty()) {
            refuse(what + " " + path + " is outside what the node policy allows (" + base::join_dirs(dirs_) +
                   "): ask the node admin to allow it, or keep the file next to the kubeconfig there");
        }
        try {
            return base::read_confined(dir, path);
        } catch (const base::ConfinedFileError& e) {
            if (e.errno_value == ELOOP) refuse(what + ": " + e.what());
            config_error(what + ": " + e.what());
        }
    }

private:
    [[noreturn]] void refuse(const std::string& message) const {
        if (on_refusal_) on_refusal_(message);
        config_error(message);
    }

    const std::vector<std::string>& dirs_;
    const std::function<void(const std::string&)>& on_refusal_;
};

}  // namespace

KubeConfig load_kubeconfig(const std::string& path, const std::vector<std::string>& allowed_dirs,
                           const std::function<void(const std::string& message)>& on_refusal) {
    if (path.empty()) {
        config_error("ipam.kubernetes.kubeconfig is required with \"datastore\": \"kubernetes\"");
    }
    if (!allowed_dirs.empty()) {
        const ConfinedReader reader(allowed_dirs, on_refusal);
        return parse_kubeconfig(reader.read(path, "ipam.kubernetes.kubeconfig"), path, reader);
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        config_error("ipam.kubernetes.kubeconfig " + path + " does not exist or is not a regular file");
    }
    auto text = read_optional(path);
    if (!text) config_error("ipam.kubernetes.kubeconfig " + path + " cannot be read");
    return parse_kubeconfig(*text, path);
}

KubeConfig load_store_kubeconfig(const StoreConfig& store) {
    if (store.kubeconfig.empty() && store.default_kube) return store.default_kube();
    return load_kubeconfig(store.kubeconfig, store.kubeconfig_dirs, store.on_refusal);
}

std::optional<KubeConfig> in_cluster_config(const std::optional<std::string>& service_host,
                                            const std::optional<std::string>& service_port, const std::string& dir) {
    if (!service_host || service_host->empty()) return std::nullopt;
    auto token = read_optional(dir + "/token");
    if (!token) return std::nullopt;
    KubeConfig c;
    std::string h = *service_host;
    if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6 service address
    c.server = "https://" + h + ":" + (service_port && !service_port->empty() ? *service_port : "443");
    c.token = trim_yaml_space(*token);
    if (!header_value_safe(c.token)) config_error("in-cluster service account token " + dir + "/token " + kUnsafeToken);
    c.ca_pem = read_optional(dir + "/ca.crt").value_or("");
    if (auto ns = read_optional(dir + "/namespace"); ns && !trim_yaml_space(*ns).empty()) {
        c.namespace_ = trim_yaml_space(*ns);
        if (!namespace_name(c.namespace_))
            config_error("in-cluster service account namespace " + dir + "/namespace " + kBadNamespace);
    }
    c.source = "in-cluster service account " + dir;
    return c;
}

}  // namespace rdmanet::ipam::kube
