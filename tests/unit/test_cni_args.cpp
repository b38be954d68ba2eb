#include <catch2/catch.hpp>

#include "rdmanet/cni/protocol/args.hpp"

using namespace rdmanet::cni;
using Strings = std::vector<std::string>;

TEST_CASE("CNI_ARGS as Multus sends them", "[cni][args]") {
    auto args = parse_cni_args(
        "IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;"
        "K8S_POD_INFRA_CONTAINER_ID=abc123;K8S_POD_UID=0b1c-22;IgnoreUnknown=1;"
        "K8S_POD_NAMESPACE=other;MAC=c2:b0:57:49:47:f1;IP=192.168.100.7/24");
    CHECK(args.pod_namespace() == "default");  // the first value wins over the duplicate
    CHECK(args.pod_name() == "web-0");
    CHECK(args.infra_container_id() == "abc123");
    CHECK(args.pod_uid() == "0b1c-22");
    CHECK(args.get("IgnoreUnknown") == "true");
    CHECK(args.mac() == "c2:b0:57:49:47:f1");
    CHECK(args.ips() == Strings{"192.168.100.7/24"});
    CHECK_FALSE(args.guid());
}

TEST_CASE("CNI_ARGS: an empty value does not shadow a later real one", "[cni][args]") {
    auto args = parse_cni_args("K8S_POD_INFRA_CONTAINER_ID=;K8S_POD_INFRA_CONTAINER_ID=sandbox");
    CHECK(args.infra_container_id() == "sandbox");
    auto only_empty = parse_cni_args("K8S_POD_NAME=");
    CHECK_FALSE(only_empty.get("K8S_POD_NAME"));
    CHECK(only_empty.pod_name().empty());
}

TEST_CASE("CNI_ARGS: empty segments and segments without '=' are skipped", "[cni][args]") {
    auto args = parse_cni_args(";;A=1;;garbage;=novalue;B=2;");
    CHECK(args.values.size() == 2);
    CHECK(args.get("A") == "1");
    CHECK(args.get("B") == "2");
    CHECK_FALSE(args.get("garbage"));
    CHECK_FALSE(args.get(""));
    CHECK(parse_cni_args("").values.empty());
    CHECK(parse_cni_args(";").values.empty());
}

TEST_CASE("CNI_ARGS: values may contain '=' (split at the first)", "[cni][args]") {
    auto args = parse_cni_args("TOKEN=a=b==c;X==");
    CHECK(args.get("TOKEN") == "a=b==c");
    CHECK(args.get("X") == "=");
}

TEST_CASE("CNI_ARGS: unknown keys are kept, keys are case-sensitive", "[cni][args]") {
    auto args = parse_cni_args("Foo=bar;mac=aa;MAC=bb");
    CHECK(args.get("Foo") == "bar");
    CHECK(args.get("mac") == "aa");
    CHECK(args.mac() == "bb");
    CHECK(args.get("GUID") == std::nullopt);
    CHECK(parse_cni_args("GUID=c2:11:22:33:44:55:66:77").guid() == "c2:11:22:33:44:55:66:77");
}

TEST_CASE("CNI_ARGS IP is a comma list with optional prefixes", "[cni][args]") {
    auto args = parse_cni_args("IP=10.1.0.5/24, fd00::5 ,,10.1.0.6");
    CHECK(args.ips() == Strings{"10.1.0.5/24", "fd00::5", "10.1.0.6"});
    CHECK(parse_cni_args("A=1").ips().empty());
}
