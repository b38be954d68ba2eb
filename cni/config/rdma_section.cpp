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

std::string rdma_device_name_problem(std::string_view name) {
    if (name.empty()) return "is empty";
    if (name.size() >= kRdmaDeviceNameMax)
        return "is " + std::to_string(name.size()) + " characters long; RDMA device names have at most " +
               std::to_string(kRdmaDeviceNameMax - 1);
    if (name == "." || name == "..") return "is not a usable name";
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                        c == '-' || c == '.';
        if (!ok)
            return std::string("contains '") + c +
                   "': use letters, digits, '_', '-' and '.' (a '%' would make the kernel number the name)";
    }
    return "";
}

void parse_rdma(const JsonFields& top, NetConf& conf, const Attempt& attempt) {
    attempt([&] {
        const auto* object = top.object("rdma");
        if (!object) return;
        const JsonFields rdma(*object, top.name("rdma"), top.code());
        if (auto tos = rdma.uint("tos", 255)) conf.rdma.tos = static_cast<unsigned char>(*tos);
        if (auto timeout = rdma.uint("gidTimeoutMs", 60000)) conf.rdma.gid_timeout_ms = *timeout;
        if (auto name = rdma.string("deviceName")) {
            if (auto problem = rdma_device_name_problem(*name); !problem.empty())
                rdma.invalid("deviceName", text::quote(*name) + " " + problem,
                             "the RDMA device gets this name inside the pod, e.g. \"rdma0\"");
            conf.rdma.device_name = *name;
        }
        auto isolation = rdma.string("isolation");
        if (!isolation) return;
        auto parsed = parse_rdma_isolation(*isolation);
        if (!parsed)
            rdma.invalid("isolation",
                         text::quote(*isolation) + " is not supported: use one of \"auto\", \"required\", \"off\"",
                         "auto moves the RDMA device into the pod when the node is in exclusive RDMA "
                         "netns mode; required fails ADD otherwise; off never moves it");
        conf.rdma.isolation = *parsed;
        if (conf.rdma.isolation == RdmaIsolation::off && !conf.rdma.device_name.empty())
            rdma.invalid("deviceName", "is set but rdma.isolation is \"off\": the pod never owns the RDMA device",
                         "set rdma.isolation to \"auto\" or \"required\", or remove rdma.deviceName");
    });
}

}  // namespace rdmanet::cni
