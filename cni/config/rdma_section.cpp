// The "rdma" object (docs/configuration.md describes it).
#include "sections.hpp"
#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

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

}  // namespace rdmanet::cni
