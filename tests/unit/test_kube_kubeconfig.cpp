// Kubernetes datastore: kubeconfig variants (parse_kubeconfig is pure; files come from a map).
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include <unistd.h>

#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/base64.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"

using namespace rdmanet::ipam;
using namespace rdmanet::ipam::kube;

namespace {

struct MapFiles : FileReader {
    std::map<std::string, std::string> files;
    std::string read(const std::string& path, const std::string& what) const override {
        auto it = files.find(path);
        if (it == files.end()) config_error(what + ": " + path + " does not exist or is not a regular file");
        return it->second;
    }
};

std::string config(const std::string& cluster, const std::string& user, const std::string& context_extra = "") {
    return "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
           "clusters:\n- name: other\n  cluster:\n    server: https://wrong:1\n- name: c1\n  cluster:\n" +
           cluster + "users:\n- name: u1\n  user:\n" + user +
           "contexts:\n- name: unused\n  context:\n    cluster: other\n    user: u1\n"
           "- name: ctx\n  context:\n    cluster: c1\n    user: u1\n" +
           context_extra;
}

std::string error_of(const std::string& yaml, const FileReader& files = MapFiles{}) {
    try {
        parse_kubeconfig(yaml, "/etc/cni/kc", files);
    } catch (const IpamError& e) {
        CHECK(e.code == codes::invalid_config);
        return e.msg;
    }
    return "";
}

}  // namespace

TEST_CASE("kubeconfig: token, embedded CA, current context and its namespace", "[kube][kubeconfig]") {
    // "aGVsbG8=" = "hello"
    auto c = parse_kubeconfig(config("    server: https://10.0.0.1:6443/\n    certificate-authority-data: aGVsbG8=\n",
                                     "    token: abc.def\n", "    namespace: rdma\n"),
                              "/etc/cni/kc");
    CHECK(c.server == "https://10.0.0.1:6443");
    CHECK(c.ca_pem == "hello");
    CHECK(c.token == "abc.def");
    CHECK(c.namespace_ == "rdma");
    CHECK_FALSE(c.insecure_skip_tls_verify);
    CHECK(c.source == "kubeconfig /etc/cni/kc");
}

TEST_CASE("kubeconfig: namespace defaults to kube-system as whereabouts does", "[kube][kubeconfig]") {
    auto c = parse_kubeconfig(config("    server: https://h:1\n", "    token: t\n"), "/k");
    CHECK(c.namespace_ == "kube-system");
    CHECK(c.ca_pem.empty());
}

TEST_CASE("kubeconfig: files relative to the kubeconfig's directory (tokenFile, CA, client cert/key)",
          "[kube][kubeconfig]") {
    MapFiles files;
    files.files["/etc/cni/token"] = "  from-file\n";
    files.files["/etc/cni/ca.pem"] = "CA";
    files.files["/abs/crt.pem"] = "CRT";
    files.files["/etc/cni/sub/key.pem"] = "KEY";
    auto c = parse_kubeconfig(config("    server: https://h:1\n    certificate-authority: ca.pem\n",
                                     "    tokenFile: token\n    client-certificate: /abs/crt.pem\n"
                                     "    client-key: sub/key.pem\n"),
                              "/etc/cni/kc", files);
    CHECK(c.token == "from-file");
    CHECK(c.ca_pem == "CA");
    CHECK(c.client_cert_pem == "CRT");
    CHECK(c.client_key_pem == "KEY");
}

TEST_CASE("kubeconfig: client certificate and key as -data, token wins over tokenFile", "[kube][kubeconfig]") {
    auto c = parse_kubeconfig(config("    server: https://h:1\n",
                                     "    token: inline\n    tokenFile: /nonexistent\n"
                                     "    client-certificate-data: Q1JU\n    client-key-data: S0VZ\n"),
                              "/k");
    CHECK(c.token == "inline");
    CHECK(c.client_cert_pem == "CRT");
    CHECK(c.client_key_pem == "KEY");
}

TEST_CASE("kubeconfig: insecure-skip-tls-verify only when set to true", "[kube][kubeconfig]") {
    CHECK(parse_kubeconfig(config("    server: https://h:1\n    insecure-skip-tls-verify: true\n", "    token: t\n"),
                           "/k")
              .insecure_skip_tls_verify);
    CHECK_FALSE(parse_kubeconfig(
                    config("    server: https://h:1\n    insecure-skip-tls-verify: false\n", "    token: t\n"), "/k")
                    .insecure_skip_tls_verify);
}

TEST_CASE("kubeconfig: errors name the file and what to fix", "[kube][kubeconfig]") {
    CHECK_THAT(error_of("clusters: [\n"), Catch::Contains("/etc/cni/kc") && Catch::Contains("not valid YAML"));
    CHECK_THAT(error_of("- a\n- b\n"), Catch::Contains("not a kubeconfig"));
    CHECK_THAT(error_of("apiVersion: v1\n"), Catch::Contains("no current-context"));
    CHECK_THAT(error_of("current-context: nope\ncontexts: []\n"), Catch::Contains("no context named \"nope\""));
    CHECK_THAT(error_of(config("    insecure-skip-tls-verify: true\n", "    token: t\n")),
               Catch::Contains("cluster \"c1\" has no server"));
    CHECK_THAT(error_of(config("    server: ftp://h\n", "    token: t\n")), Catch::Contains("https://"));
    CHECK_THAT(error_of(config("    server: https://h:1\n    certificate-authority-data: \"%%%\"\n", "    token: t\n")),
               Catch::Contains("certificate-authority-data is not valid base64"));
    CHECK_THAT(error_of(config("    server: https://h:1\n    certificate-authority: missing.pem\n", "    token: t\n")),
               Catch::Contains("/etc/cni/missing.pem"));
    CHECK_THAT(error_of(config("    server: https://h:1\n", "    exec:\n      command: aws\n")),
               Catch::Contains("\"exec\"") && Catch::Contains("does not support"));
    CHECK_THAT(error_of(config("    server: https://h:1\n", "    client-certificate-data: Q1JU\n")),
               Catch::Contains("without its key"));
}

TEST_CASE("kubeconfig: load_kubeconfig refuses a missing path", "[kube][kubeconfig]") {
    try {
        load_kubeconfig("/nonexistent/rdmanet/kubeconfig");
        FAIL("no error");
    } catch (const IpamError& e) {
        CHECK(e.code == codes::invalid_config);
        CHECK_THAT(e.msg, Catch::Contains("/nonexistent/rdmanet/kubeconfig") && Catch::Contains("does not exist"));
    }
    CHECK_THROWS_AS(load_kubeconfig(""), IpamError);
}

TEST_CASE(
    "kubeconfig: a store's own kubeconfig wins over the caller's default access, which fills in only "
    "when none is named",
    "[kube][kubeconfig]") {
    char tmpl[] = "/tmp/rdmanet-kc-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string path = std::string(tmpl) + "/kc";
    std::ofstream(path) << config("    server: https://own:1\n", "    token: own-token\n");
    int default_calls = 0;
    StoreConfig store;
    store.default_kube = [&default_calls] {
        ++default_calls;
        KubeConfig c;
        c.server = "https://default:2";
        c.source = "the caller's default";
        return c;
    };
    CHECK(load_store_kubeconfig(store).server == "https://default:2");
    CHECK(load_store_kubeconfig(store).server == "https://default:2");
    CHECK(default_calls == 2);  // asked on every use: a rotated token is read again

    store.kubeconfig = path;
    CHECK(load_store_kubeconfig(store).server == "https://own:1");
    CHECK(default_calls == 2);

    // Without a default the kubeconfig stays required, as rdmanet-ipam requires it.
    StoreConfig bare;
    try {
        load_store_kubeconfig(bare);
        FAIL("no error");
    } catch (const IpamError& e) {
        CHECK_THAT(e.msg, Catch::Contains("ipam.kubernetes.kubeconfig is required"));
    }
    std::filesystem::remove_all(tmpl);
}

TEST_CASE("kubeconfig: in-cluster service account (rdmanetctl in a pod)", "[kube][kubeconfig]") {
    char tmpl[] = "/tmp/rdmanet-sa-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string dir = tmpl;
    CHECK_FALSE(in_cluster_config(std::nullopt, std::nullopt, dir).has_value());  // not in a pod
    CHECK_FALSE(in_cluster_config(std::string(), "6443", dir).has_value());       // not in a pod
    CHECK_FALSE(in_cluster_config("fd00::1", "6443", dir).has_value());           // no token file
    {
        FILE* f = std::fopen((dir + "/token").c_str(), "w");
        std::fputs("sa-token\n", f);
        std::fclose(f);
        f = std::fopen((dir + "/namespace").c_str(), "w");
        std::fputs("rdma-system", f);
        std::fclose(f);
        f = std::fopen((dir + "/ca.crt").c_str(), "w");
        std::fputs("CA", f);
        std::fclose(f);
    }
    auto c = in_cluster_config("fd00::1", "6443", dir);
    REQUIRE(c.has_value());
    CHECK(c->server == "https://[fd00::1]:6443");
    CHECK(c->token == "sa-token");
    CHECK(c->ca_pem == "CA");
    CHECK(c->namespace_ == "rdma-system");
    CHECK(in_cluster_config("10.96.0.1", std::nullopt, dir)->server == "https://10.96.0.1:443");
    for (const char* f : {"/token", "/namespace", "/ca.crt"}) std::remove((dir + f).c_str());
    ::rmdir(dir.c_str());
}

// The node policy's confinement: a kubeconfig in an allowed directory must not become a
// way to read the kubelet's credentials or any other file, directly or through a symlink.
TEST_CASE("kubeconfig: confined to the allowed dirs, the files it names included", "[kube][kubeconfig][policy]") {
    char tmpl[] = "/tmp/rdmanet-kc-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string base = tmpl;
    const std::string allowed = base + "/net.d", outside = base + "/kubelet";
    std::filesystem::create_directories(allowed + "/sub");
    std::filesystem::create_directories(outside);
    struct Cleanup {
        std::string dir;
        ~Cleanup() {
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
        }
    } cleanup{base};
    auto write = [](const std::string& path, const std::string& text) { std::ofstream(path) << text; };
    write(allowed + "/sub/token", "inside-token\n");
    write(outside + "/token", "kubelet-token\n");
    write(outside + "/kubeconfig", config("    server: https://h:1\n", "    token: t\n"));

    std::vector<std::string> refusals;
    const auto audit = [&](const std::string& m) { refusals.push_back(m); };
    const std::vector<std::string> dirs{allowed};
    auto refusal = [&](const std::string& kubeconfig_path) -> std::string {
        try {
            load_kubeconfig(kubeconfig_path, dirs, audit);
        } catch (const IpamError& e) {
            CHECK(e.code == codes::invalid_config);
            return e.msg;
        }
        return "";
    };

    SECTION("a token file next to it (relative) is read") {
        write(allowed + "/kc", config("    server: https://h:1\n", "    tokenFile: sub/token\n"));
        CHECK(load_kubeconfig(allowed + "/kc", dirs, audit).token == "inside-token");
        CHECK(refusals.empty());
    }
    SECTION("a token file outside the allowed dirs is refused, naming key, file and allowed dir") {
        write(allowed + "/kc", config("    server: https://h:1\n", "    tokenFile: " + outside + "/token\n"));
        const auto msg = refusal(allowed + "/kc");
        CHECK_THAT(msg, Catch::Contains("tokenFile") && Catch::Contains(outside + "/token") &&
                            Catch::Contains(allowed) && Catch::Contains("node policy"));
        CHECK(msg.find("kubelet-token") == std::string::npos);
        REQUIRE(refusals.size() == 1);
        CHECK(refusals[0] == msg);
    }
    SECTION("a relative path climbing out with .. is refused") {
        write(allowed + "/kc", config("    server: https://h:1\n", "    tokenFile: ../kubelet/token\n"));
        CHECK_THAT(refusal(allowed + "/kc"), Catch::Contains("outside what the node policy allows"));
    }
    SECTION("a client key or CA file outside is refused too") {
        write(allowed + "/kc",
              config("    server: https://h:1\n    certificate-authority: " + outside + "/token\n", "    token: t\n"));
        CHECK_THAT(refusal(allowed + "/kc"), Catch::Contains("certificate-authority"));
        write(allowed + "/kc", config("    server: https://h:1\n",
                                      "    client-certificate: sub/token\n"
                                      "    client-key: " +
                                          outside + "/token\n"));
        CHECK_THAT(refusal(allowed + "/kc"), Catch::Contains("client-key"));
    }
    SECTION("a symlink inside the allowed dir to a file outside is refused, not followed") {
        std::filesystem::create_symlink(outside + "/token", allowed + "/sub/link");
        write(allowed + "/kc", config("    server: https://h:1\n", "    tokenFile: sub/link\n"));
        CHECK_THAT(refusal(allowed + "/kc"), Catch::Contains("symlink"));
        REQUIRE(refusals.size() == 1);
        std::filesystem::create_symlink(outside + "/kubeconfig", allowed + "/kc-link");
        CHECK_THAT(refusal(allowed + "/kc-link"), Catch::Contains("symlink"));
    }
    SECTION("the kubeconfig itself outside is refused") {
        CHECK_THAT(refusal(outside + "/kubeconfig"), Catch::Contains("ipam.kubernetes.kubeconfig"));
    }
    SECTION("without allowed dirs (rdmanetctl --kubeconfig) nothing is confined") {
        write(allowed + "/kc", config("    server: https://h:1\n", "    tokenFile: " + outside + "/token\n"));
        CHECK(load_kubeconfig(allowed + "/kc").token == "kubelet-token");
    }
}

TEST_CASE("base64: standard and URL alphabets, whitespace, optional padding", "[kube][kubeconfig]") {
    CHECK(base64_decode("aGVsbG8=") == "hello");
    CHECK(base64_decode("aGVs\n bG8") == "hello");  // wrapped, unpadded
    CHECK(base64_decode("-_8=", Base64Alphabet::url) == std::string("\xfb\xff", 2));
    CHECK(base64_decode("+/8=") == std::string("\xfb\xff", 2));
    CHECK_FALSE(base64_decode("-_8=").has_value());  // URL characters in standard
    CHECK_FALSE(base64_decode("+/8=", Base64Alphabet::url).has_value());
    CHECK_FALSE(base64_decode("aGVs=bG8").has_value());  // data after padding
    CHECK_FALSE(base64_decode("aGVs*G8").has_value());
    CHECK(base64_decode("") == "");
}

// A token (or anything else that reaches a header or the request line) with CR/LF would let the
// file's author add headers of their own to every request: refused when read, naming the source.
TEST_CASE("kubeconfig: tokens and namespaces that would inject headers are refused where read",
          "[kube][kubeconfig][hostile]") {
    const std::string cluster = "    server: https://10.0.0.1:6443\n";
    // YAML double-quoted escapes put the raw bytes into the scalar.
    CHECK_THAT(
        error_of(config(cluster, "    token: \"abc\\r\\nX-Injected: 1\"\n")),
        Catch::Contains("/etc/cni/kc") && Catch::Contains("user \"u1\" token") && Catch::Contains("control character"));
    CHECK_THAT(error_of(config(cluster, "    token: \"abc\\u0000def\"\n")), Catch::Contains("control character"));
    CHECK_THAT(error_of(config(cluster, "    token: \"a\\tb\"\n")), Catch::Contains("control character"));
    MapFiles files;
    files.files["/etc/cni/tok"] = "abc\r\nX-Injected: 1\n";
    CHECK_THAT(error_of(config(cluster, "    tokenFile: tok\n"), files),
               Catch::Contains("tokenFile /etc/cni/tok") && Catch::Contains("control character"));
    files.files["/etc/cni/tok"] = "good-token\r\n";  // a trailing line end is trimmed, as before
    CHECK(parse_kubeconfig(config(cluster, "    tokenFile: tok\n"), "/etc/cni/kc", files).token == "good-token");
    CHECK_THAT(error_of(config("    server: \"https://10.0.0.1:6443/x\\r\\nX-Injected: 1\"\n", "    token: t\n")),
               Catch::Contains("/etc/cni/kc"));
    CHECK_THAT(error_of(config(cluster, "    token: t\n", "    namespace: \"kube-system HTTP/1.1\\r\\nX: 1\"\n")),
               Catch::Contains("namespace") && Catch::Contains("not a namespace name"));

    char tmpl[] = "/tmp/rdmanet-sa-hostile-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string dir = tmpl;
    std::ofstream(dir + "/token") << "sa\r\nX-Injected: 1\n";
    try {
        in_cluster_config("10.96.0.1", "443", dir);
        FAIL("a token with CR/LF was accepted");
    } catch (const IpamError& e) {
        CHECK(e.code == codes::invalid_config);
        CHECK_THAT(e.msg, Catch::Contains(dir + "/token") && Catch::Contains("control character"));
    }
    std::ofstream(dir + "/token") << "sa\n";
    std::ofstream(dir + "/namespace") << "ns\r\nX: 1";
    CHECK_THROWS_WITH(in_cluster_config("10.96.0.1", "443", dir), Catch::Contains(dir + "/namespace"));
    for (const char* f : {"/token", "/namespace"}) std::remove((dir + f).c_str());
    ::rmdir(dir.c_str());
}
