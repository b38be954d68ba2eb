#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cni_test_helpers.hpp"
#include "rdmanet/cni/protocol/exec_plugin.hpp"

using namespace rdmanet::cni;
using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// A temporary CNI_PATH directory holding fake plugins written as shell scripts.
class FakePluginDir {
public:
    FakePluginDir() {
        std::string pattern = (fs::temp_directory_path() / "rdmanet-exec-XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        dir_ = pattern;
    }
    ~FakePluginDir() {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }
    FakePluginDir(const FakePluginDir&) = delete;
    FakePluginDir& operator=(const FakePluginDir&) = delete;

    // Writes `body` after a /bin/sh shebang; $DIR in the body is this directory.
    void add(const std::string& name, const std::string& body, bool executable = true) const {
        fs::path file = dir_ / name;
        std::ofstream(file) << "#!/bin/sh\nDIR='" << dir_.string() << "'\n" << body << "\n";
        fs::permissions(file, executable ? fs::perms(0755) : fs::perms(0644));
    }
    std::string read(const std::string& name) const {
        std::ifstream in(dir_ / name);
        std::stringstream all;
        all << in.rdbuf();
        return all.str();
    }
    std::string path() const { return dir_.string(); }
    Environment env() const {
        Environment env;
        env.command = Command::add;
        env.container_id = "ctr-1";
        env.netns = "/var/run/netns/test";
        env.ifname = "net1";
        env.cni_args_raw = "IgnoreUnknown=1;K8S_POD_NAME=web-0";
        env.path = {"/nonexistent-dir", path()};
        return env;
    }

private:
    fs::path dir_;
};

const json kConfig = json::parse(R"({"cniVersion":"1.0.0","name":"rdma-net","ipam":{"type":"fake"}})");

// Sets an environment variable for one test and puts the old value back.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        ::setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (old_)
            ::setenv(name_, old_->c_str(), 1);
        else
            ::unsetenv(name_);
    }

private:
    const char* name_;
    std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("exec_plugin: success passes config on stdin and the CNI environment", "[cni][exec]") {
    FakePluginDir plugins;
    plugins.add("fake", R"(cat > "$DIR/stdin"
env > "$DIR/env"
echo "$#" > "$DIR/argc"
printf '{"cniVersion":"1.0.0","ips":[{"address":"10.1.0.5/24"}]}')");
    ScopedEnv stale("CNI_COMMAND", "ADD");            // replaced, not duplicated
    ScopedEnv marker("RDMANET_TEST_MARKER", "kept");  // the rest of the environment passes through
    auto env = plugins.env();

    json out = exec_plugin("fake", Command::del, env, kConfig, 5s);
    CHECK(out == json::parse(R"({"cniVersion":"1.0.0","ips":[{"address":"10.1.0.5/24"}]})"));
    CHECK(json::parse(plugins.read("stdin")) == kConfig);
    CHECK(plugins.read("argc") == "0\n");
    std::string child_env = plugins.read("env");
    CHECK_THAT(child_env, Catch::Matchers::Contains("CNI_COMMAND=DEL\n"));
    CHECK_THAT(child_env, !Catch::Matchers::Contains("CNI_COMMAND=ADD"));
    CHECK_THAT(child_env, Catch::Matchers::Contains("CNI_CONTAINERID=ctr-1\n"));
    CHECK_THAT(child_env, Catch::Matchers::Contains("CNI_NETNS=/var/run/netns/test\n"));
    CHECK_THAT(child_env, Catch::Matchers::Contains("CNI_IFNAME=net1\n"));
    CHECK_THAT(child_env, Catch::Matchers::Contains("CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=web-0\n"));
    CHECK_THAT(child_env, Catch::Matchers::Contains("CNI_PATH=/nonexistent-dir:" + plugins.path() + "\n"));
    CHECK_THAT(child_env, Catch::Matchers::Contains("RDMANET_TEST_MARKER=kept\n"));
}

TEST_CASE("exec_plugin: empty output is null (DEL, CHECK)", "[cni][exec]") {
    FakePluginDir plugins;
    plugins.add("quiet", "cat > /dev/null\nexit 0");
    CHECK(exec_plugin("quiet", Command::del, plugins.env(), kConfig, 5s).is_null());
    plugins.add("blank", "printf '  \\n'");
    CHECK(exec_plugin("blank", Command::check, plugins.env(), kConfig, 5s).is_null());
}

TEST_CASE("exec_plugin: the plugin's CNI error is passed through", "[cni][exec]") {
    FakePluginDir plugins;
    plugins.add("busy", R"(cat > /dev/null
printf '{"cniVersion":"1.0.0","code":11,"msg":"pool busy","details":"retry later"}'
echo "some log line" >&2
exit 1)");
    auto e = testing::expect_cni_error([&] { exec_plugin("busy", Command::add, plugins.env(), kConfig, 5s); });
    CHECK(e.code() == 11);
    CHECK(e.msg() == "pool busy");
    CHECK(e.details() == "retry later");
}

TEST_CASE("exec_plugin: failure without a CNI error names the plugin and its stderr", "[cni][exec]") {
    FakePluginDir plugins;
    // Exits without reading stdin: a large config makes our write hit EPIPE, which must not
    // kill the test process with SIGPIPE.
    plugins.add("broken", "echo '  boom: cannot allocate  ' >&2\nexit 3");
    json big = kConfig;
    big["padding"] = std::string(1 << 20, 'x');
    auto e = testing::expect_cni_error([&] { exec_plugin("broken", Command::add, plugins.env(), big, 5s); });
    CHECK(e.code() == static_cast<int>(ErrorCode::ipam_failure));
    CHECK(e.msg() == "plugin \"broken\" (ADD) failed (exit status 3): boom: cannot allocate");

    plugins.add("silent-fail", "exit 2");
    auto silent =
        testing::expect_cni_error([&] { exec_plugin("silent-fail", Command::del, plugins.env(), kConfig, 5s); });
    CHECK(silent.msg() == "plugin \"silent-fail\" (DEL) failed (exit status 2) without an error message");

    plugins.add("odd-code", R"(printf '{"code":"11","msg":"not a number code"}'; exit 1)");
    auto odd = testing::expect_cni_error([&] { exec_plugin("odd-code", Command::add, plugins.env(), kConfig, 5s); });
    CHECK(odd.code() == static_cast<int>(ErrorCode::ipam_failure));
    CHECK_THAT(odd.details(), Catch::Matchers::Contains("not a number code"));

    plugins.add("suicide", "kill -9 $$");
    auto killed = testing::expect_cni_error([&] { exec_plugin("suicide", Command::add, plugins.env(), kConfig, 5s); });
    CHECK(killed.code() == static_cast<int>(ErrorCode::ipam_failure));
    CHECK_THAT(killed.msg(), Catch::Matchers::Contains("killed by signal 9"));
}

TEST_CASE("exec_plugin: garbage on success is an IPAM failure", "[cni][exec]") {
    FakePluginDir plugins;
    plugins.add("garbage", "cat > /dev/null\necho 'hello world'");
    auto e = testing::expect_cni_error([&] { exec_plugin("garbage", Command::add, plugins.env(), kConfig, 5s); });
    CHECK(e.code() == static_cast<int>(ErrorCode::ipam_failure));
    CHECK_THAT(e.msg(), Catch::Matchers::StartsWith("plugin \"garbage\" (ADD) printed output that is not JSON"));
    CHECK(e.details() == "stdout: hello world");

    plugins.add("deep", "cat > /dev/null\nawk 'BEGIN { for (i = 0; i < 100000; i++) printf \"[\" }'");
    auto deep = testing::expect_cni_error([&] { exec_plugin("deep", Command::add, plugins.env(), kConfig, 5s); });
    CHECK(deep.code() == static_cast<int>(ErrorCode::ipam_failure));
    CHECK_THAT(deep.msg(), Catch::Matchers::Contains("deeper than"));
}

TEST_CASE("exec_plugin: a plugin past its deadline is killed and reaped", "[cni][exec]") {
    FakePluginDir plugins;
    plugins.add("hang", "echo $$ > \"$DIR/pid\"\nexec sleep 30");
    auto started = std::chrono::steady_clock::now();
    auto e = testing::expect_cni_error([&] { exec_plugin("hang", Command::add, plugins.env(), kConfig, 300ms); });
    auto elapsed = std::chrono::steady_clock::now() - started;
    CHECK(e.code() == static_cast<int>(ErrorCode::timeout));
    CHECK(e.msg() == "plugin \"hang\" (ADD) did not finish within 300 ms and was killed");
    CHECK(elapsed >= 300ms);
    CHECK(elapsed < 3s);
    pid_t pid = std::stoi(plugins.read("pid"));
    errno = 0;
    CHECK(::kill(pid, 0) == -1);  // gone: killed and reaped, not a zombie
    CHECK(errno == ESRCH);
}

TEST_CASE("exec_plugin: a descendant holding stdout does not delay the result", "[cni][exec]") {
    FakePluginDir plugins;
    plugins.add("forks", "cat > /dev/null\nsleep 3 &\nprintf '{\"cniVersion\":\"1.0.0\"}'");
    auto started = std::chrono::steady_clock::now();
    json out = exec_plugin("forks", Command::add, plugins.env(), kConfig, 10s);
    CHECK(out["cniVersion"] == "1.0.0");
    CHECK(std::chrono::steady_clock::now() - started < 2s);
}

TEST_CASE("exec_plugin: large stdin is written completely", "[cni][exec]") {
    FakePluginDir plugins;
    plugins.add("sink", "cat > \"$DIR/got\"\necho '{}'");
    json big = kConfig;
    big["padding"] = std::string(1 << 20, 'y');  // far beyond a pipe buffer
    CHECK(exec_plugin("sink", Command::add, plugins.env(), big, 10s) == json::object());
    CHECK(plugins.read("got") == big.dump());
}

TEST_CASE("exec_plugin: plugin lookup in CNI_PATH", "[cni][exec]") {
    FakePluginDir first, second;
    first.add("ipam", "echo '{\"from\":\"first\"}'", /*executable=*/false);  // skipped
    second.add("ipam", "cat >/dev/null; echo '{\"from\":\"second\"}'");
    Environment env = first.env();
    env.path = {first.path(), second.path()};
    CHECK(exec_plugin("ipam", Command::add, env, kConfig, 5s)["from"] == "second");

    fs::create_directory(first.path() + "/dir-plugin");  // a directory is not a plugin
    env.path = {first.path()};
    auto missing = testing::expect_cni_error([&] { exec_plugin("dir-plugin", Command::add, env, kConfig, 5s); });
    CHECK(missing.code() == static_cast<int>(ErrorCode::invalid_config));
    CHECK(missing.msg() == "failed to find plugin \"dir-plugin\" in path [" + first.path() + "]");

    auto none = testing::expect_cni_error([&] { exec_plugin("host-local", Command::add, env, kConfig, 5s); });
    CHECK(none.code() == static_cast<int>(ErrorCode::invalid_config));
    CHECK_THAT(none.msg(), Catch::Matchers::StartsWith("failed to find plugin \"host-local\""));

    for (const char* bad : {"../ipam", "/bin/sh", ".", "..", ""}) {
        INFO(bad);
        auto e = testing::expect_cni_error([&] { exec_plugin(bad, Command::add, env, kConfig, 5s); });
        CHECK(e.code() == static_cast<int>(ErrorCode::invalid_config));
        CHECK_THAT(e.msg(), Catch::Matchers::Contains("must be a plain file name"));
    }
}
