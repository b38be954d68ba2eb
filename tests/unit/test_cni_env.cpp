#include <catch2/catch.hpp>

#include <map>

#include "cni_test_helpers.hpp"
#include "rdmanet/cni/protocol/env.hpp"

using namespace rdmanet::cni;
using Vars = std::map<std::string, std::string>;

namespace {

EnvLookup lookup_in(Vars vars) {
    return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
        auto it = vars.find(name);
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
}

Vars full_add() {
    return {{"CNI_COMMAND", "ADD"},
            {"CNI_CONTAINERID", "3f1c0a9e-pod"},
            {"CNI_NETNS", "/var/run/netns/cni-1234"},
            {"CNI_IFNAME", "net1"},
            {"CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAME=web-0"},
            {"CNI_PATH", "/opt/cni/bin::/usr/libexec/cni:"}};
}

Vars with(Vars vars, const std::string& name, std::optional<std::string> value) {
    if (value)
        vars[name] = *value;
    else
        vars.erase(name);
    return vars;
}

Error env_error(const Vars& vars) {
    return testing::expect_cni_error([&] { parse_environment(lookup_in(vars)); });
}

}  // namespace

TEST_CASE("env: a full ADD environment is parsed", "[cni][env]") {
    auto env = parse_environment(lookup_in(full_add()));
    CHECK(env.command == Command::add);
    CHECK(env.container_id == "3f1c0a9e-pod");
    CHECK(env.netns == "/var/run/netns/cni-1234");
    CHECK(env.ifname == "net1");
    CHECK(env.cni_args_raw == "IgnoreUnknown=1;K8S_POD_NAME=web-0");
    CHECK(env.args.pod_name() == "web-0");
    CHECK(env.path == std::vector<std::string>{"/opt/cni/bin", "/usr/libexec/cni"});  // empties dropped
}

TEST_CASE("env: $NODENAME is read with the CNI variables (node-slice IPAM), unset or empty is none", "[cni][env]") {
    CHECK_FALSE(parse_environment(lookup_in(full_add())).nodename.has_value());
    CHECK_FALSE(parse_environment(lookup_in(with(full_add(), "NODENAME", ""))).nodename.has_value());
    CHECK(parse_environment(lookup_in(with(full_add(), "NODENAME", "gpu-node-7"))).nodename == "gpu-node-7");
}

TEST_CASE("env: no CNI_COMMAND means command none, whatever else is missing", "[cni][env]") {
    CHECK(parse_environment(lookup_in({})).command == Command::none);
    CHECK(parse_environment(lookup_in({{"CNI_COMMAND", ""}})).command == Command::none);
}

TEST_CASE("env: unknown CNI_COMMAND is code 4", "[cni][env]") {
    auto e = env_error(with(full_add(), "CNI_COMMAND", "add"));  // verbs are upper case
    CHECK(e.code() == 4);
    CHECK_THAT(e.msg(), Catch::Matchers::Contains("unknown CNI_COMMAND \"add\""));
    CHECK(env_error(with(full_add(), "CNI_COMMAND", "DELETE")).code() == 4);
}

TEST_CASE("env: required variables per verb (skel's rules)", "[cni][env]") {
    SECTION("ADD and CHECK need CONTAINERID, NETNS, IFNAME and PATH") {
        for (const char* verb : {"ADD", "CHECK"}) {
            auto e = env_error(Vars{{"CNI_COMMAND", verb}});
            CHECK(e.code() == 4);
            CHECK(e.msg() == "required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing");
            CHECK(e.details() == "CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH");
        }
    }
    SECTION("a single missing variable is named") {
        auto e = env_error(with(full_add(), "CNI_NETNS", std::nullopt));
        CHECK(e.code() == 4);
        CHECK(e.msg() == "required env variables [CNI_NETNS] missing");
        CHECK(env_error(with(full_add(), "CNI_NETNS", "")).msg() == "required env variables [CNI_NETNS] missing");
        CHECK(env_error(with(full_add(), "CNI_PATH", ":")).msg() == "required env variables [CNI_PATH] missing");
        CHECK(env_error(with(full_add(), "CNI_IFNAME", "")).msg() == "required env variables [CNI_IFNAME] missing");
    }
    SECTION("DEL does not need CNI_NETNS") {
        auto vars = with(with(full_add(), "CNI_COMMAND", "DEL"), "CNI_NETNS", std::nullopt);
        auto env = parse_environment(lookup_in(vars));
        CHECK(env.command == Command::del);
        CHECK(env.netns.empty());
        auto e = env_error(Vars{{"CNI_COMMAND", "DEL"}});
        CHECK(e.msg() == "required env variables [CNI_CONTAINERID,CNI_IFNAME,CNI_PATH] missing");
    }
    SECTION("GC needs only CNI_PATH") {
        CHECK(env_error(Vars{{"CNI_COMMAND", "GC"}}).msg() == "required env variables [CNI_PATH] missing");
        auto env = parse_environment(lookup_in({{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/opt/cni/bin"}}));
        CHECK(env.command == Command::gc);
    }
    SECTION("STATUS and VERSION need nothing else, and do not validate what is there") {
        CHECK(parse_environment(lookup_in({{"CNI_COMMAND", "STATUS"}})).command == Command::status);
        CHECK(parse_environment(lookup_in({{"CNI_COMMAND", "VERSION"}})).command == Command::version);
        auto odd = parse_environment(
            lookup_in({{"CNI_COMMAND", "VERSION"}, {"CNI_IFNAME", "dummy/name"}, {"CNI_CONTAINERID", ""}}));
        CHECK(odd.ifname == "dummy/name");
    }
}

TEST_CASE("env: container id validation", "[cni][env]") {
    SECTION("set but empty is code 3 (container unknown)") {
        auto e = env_error(with(full_add(), "CNI_CONTAINERID", ""));
        CHECK(e.code() == 3);
        CHECK_THAT(e.msg(), Catch::Matchers::Contains("CNI_CONTAINERID is empty"));
        CHECK(env_error(with(with(full_add(), "CNI_COMMAND", "DEL"), "CNI_CONTAINERID", "")).code() == 3);
    }
    SECTION("outside the charset is code 4") {
        for (const char* bad : {"-leading-dash", ".hidden", "a/b", "a b", "ü", "a:b", "_x"}) {
            auto e = env_error(with(full_add(), "CNI_CONTAINERID", bad));
            CHECK(e.code() == 4);
            CHECK_THAT(e.msg(),
                       Catch::Matchers::Contains("CNI_CONTAINERID") && Catch::Matchers::Contains("is invalid"));
        }
    }
    SECTION("the charset itself is accepted") {
        auto env = parse_environment(lookup_in(with(full_add(), "CNI_CONTAINERID", "A9_b.c-D")));
        CHECK(env.container_id == "A9_b.c-D");
    }
}

TEST_CASE("env: CNI_IFNAME validation says what is wrong", "[cni][env]") {
    auto e = env_error(with(full_add(), "CNI_IFNAME", "a/b"));
    CHECK(e.code() == 4);
    CHECK(
        e.msg() ==
        "CNI_IFNAME \"a/b\" is invalid: it contains '/' (an interface name is 1-15 bytes, not \".\" or \"..\", without '/', ':', '%', whitespace or control characters)");
    CHECK(e.details() == "CNI_IFNAME: it contains '/'");

    auto long_name = env_error(with(full_add(), "CNI_IFNAME", "abcdefghijklmnop"));  // 16
    CHECK(long_name.code() == 4);
    CHECK(long_name.details() == "CNI_IFNAME: it is 16 characters long");

    CHECK(env_error(with(full_add(), "CNI_IFNAME", "a:b")).details() == "CNI_IFNAME: it contains ':'");
    CHECK(env_error(with(full_add(), "CNI_IFNAME", "a b")).details() == "CNI_IFNAME: it contains whitespace");
    CHECK(env_error(with(full_add(), "CNI_IFNAME", "a\tb")).details() == "CNI_IFNAME: it contains whitespace");
    // Untrusted text is quoted as a JSON string, so a newline cannot forge a second log line.
    CHECK_THAT(env_error(with(full_add(), "CNI_IFNAME", "a\nb")).msg(),
               Catch::Matchers::StartsWith("CNI_IFNAME \"a\\nb\" is invalid"));
    CHECK(env_error(with(full_add(), "CNI_IFNAME", ".")).details() == "CNI_IFNAME: it is a path component");
    CHECK(env_error(with(full_add(), "CNI_IFNAME", "..")).code() == 4);
    CHECK(env_error(with(with(full_add(), "CNI_COMMAND", "DEL"), "CNI_IFNAME", "a/b")).code() == 4);

    // '%': the kernel would expand "net%d" to "net0" when creating the device. ADD and CHECK
    // refuse it; DEL accepts it, since no device can bear it (nothing to find, nothing to fail).
    for (const char* command : {"ADD", "CHECK"}) {
        auto percent = env_error(with(with(full_add(), "CNI_COMMAND", command), "CNI_IFNAME", "net%d"));
        CHECK(percent.code() == 4);
        CHECK_THAT(percent.msg(), Catch::Matchers::StartsWith("CNI_IFNAME \"net%d\" is invalid: it contains '%', "
                                                              "which the kernel expands as a name template"));
    }
    auto del = parse_environment(lookup_in(with(with(full_add(), "CNI_COMMAND", "DEL"), "CNI_IFNAME", "net%d")));
    CHECK(del.ifname == "net%d");

    auto ok = parse_environment(lookup_in(with(full_add(), "CNI_IFNAME", "abcdefghijklmno")));  // 15
    CHECK(ok.ifname == "abcdefghijklmno");
}

TEST_CASE("identifier checks", "[cni][env]") {
    CHECK(is_valid_ifname("net1"));
    CHECK(is_valid_ifname("eth0.100"));
    CHECK(is_valid_ifname("..."));
    CHECK_FALSE(is_valid_ifname(""));
    CHECK_FALSE(is_valid_ifname(std::string("a\0b", 3)));
    CHECK_FALSE(is_valid_ifname("a\x7f"));
    CHECK_FALSE(is_valid_ifname("net%d"));
    CHECK_FALSE(is_valid_ifname("%"));
    CHECK(ifname_problem("net%d").find("name template") != std::string::npos);
    CHECK(ifname_problem("net1").empty());

    CHECK(is_valid_container_id("a"));
    CHECK_FALSE(is_valid_container_id(""));

    CHECK(is_valid_network_name("rdma-net"));
    CHECK(is_valid_network_name(std::string(253, 'n')));
    CHECK_FALSE(is_valid_network_name(std::string(254, 'n')));
    CHECK_FALSE(is_valid_network_name("my net"));
    CHECK_FALSE(is_valid_network_name("../etc"));
    CHECK_FALSE(is_valid_network_name(""));
}

TEST_CASE("command names round-trip", "[cni][env]") {
    for (auto command : {Command::add, Command::del, Command::check, Command::version, Command::status, Command::gc})
        CHECK(parse_command(command_name(command)) == command);
    CHECK(command_name(Command::gc) == "GC");
    CHECK(parse_command("") == Command::none);
    CHECK(parse_command("ADD ") == Command::none);
}
