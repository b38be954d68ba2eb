// The "rdma" object and the keys of mode "ipoib" (docs/configuration.md describes both).
#include <charconv>

#include "sections.hpp"
#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

namespace {

// A partition key as an integer (32769) or a hex string ("0x8001", as ib-kubernetes and
// `cat /sys/class/net/ib0/pkey` write it). The kernel refuses 0x0000 and 0x8000 (the invalid
// key with and without the membership bit).
std::optional<unsigned> pkey(const JsonFields& f, std::string_view key) {
    const auto* value = f.get(key);
    if (!value) return std::nullopt;
    unsigned pkey = 0;
    if (value->is_string()) {
        const auto text = value->get<std::string>();
        std::string_view digits = text;
        int base = 10;
        if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
            digits.remove_prefix(2);
            base = 16;
        }
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pkey, base);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
            f.invalid(key, text::quote(text) + " is not a partition key: write a number such as "
                                               "\"0x8001\" or 32769");
    } else {
        pkey = f.uint(key).value_or(0);
    }
    if (pkey > 0xffff || (pkey & 0x7fff) == 0)
        f.invalid(key, std::to_string(pkey) + " is not a usable partition key: it must be 0x0001-0xffff "
                                              "and not 0x8000 (the 15-bit key must not be 0)");
    return pkey;
}

}  // namespace

std::string_view rdma_isolation_name(RdmaIsolation isolation) {
    switch (isolation) {
        case RdmaIsolation::auto_: return "auto";
        case RdmaIsolation::required: return "required";
        case RdmaIsolation::off: return "off";
    }
    return "";
}

std::optional<RdmaIsolation> parse_rdma_isolation(std::string_view name) {
    if (name == "auto") return RdmaIsolation::auto_;
    if (name == "required") return RdmaIsolation::required;
    if (name == "off") return RdmaIsolation::off;
    return std::nullopt;
}

void parse_rdma(const JsonFields& top, NetConf& conf, const Attempt& attempt) {
    attempt([&] {
        const auto* object = top.object("rdma");
        if (!object) return;
        const JsonFields rdma(*object, top.name("rdma"), top.code());
        if (auto tos = rdma.uint("tos", 255)) conf.rdma.tos = static_cast<unsigned char>(*tos);
        auto isolation = rdma.string("isolation");
        if (!isolation) return;
        auto parsed = parse_rdma_isolation(*isolation);
        if (!parsed)
            rdma.invalid("isolation", text::quote(*isolation) +
                                          " is not supported: use one of \"auto\", \"required\", \"off\"",
                         "auto moves the RDMA device into the pod when the node is in exclusive RDMA "
                         "netns mode; required fails ADD otherwise; off never moves it");
        conf.rdma.isolation = *parsed;
    });
}

void parse_ipoib(const JsonFields& top, NetConf& conf, const Attempt& attempt, bool required) {
    auto& ipoib = conf.ipoib;
    attempt([&] {
        auto master = top.string("master");
        if (master && !is_valid_ifname(*master))
            top.invalid("master", text::quote(*master) + " is not a valid interface name");
        if (!master && required)
            top.invalid("master", "is required in ipoib mode: set it to the IPoIB parent interface "
                                  "(e.g. \"ib0\")");
        ipoib.master = master.value_or("");
    });
    attempt([&] { ipoib.pkey = pkey(top, "pkey"); });
    attempt([&] {
        auto mode = top.string("ipoibMode");
        if (mode && *mode != "datagram" && *mode != "connected")
            top.invalid("ipoibMode", text::quote(*mode) +
                                         " is not supported: use \"datagram\" or \"connected\" (or leave it "
                                         "out to inherit the parent's mode)");
        ipoib.mode = mode;
    });
    attempt([&] { ipoib.mtu = top.uint("mtu", 0x7fffffff).value_or(0); });
}

}  // namespace rdmanet::cni
