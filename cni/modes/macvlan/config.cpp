// mode "macvlan": its configuration keys.
#include <array>

#include "rdmanet/cni/modes/macvlan/mode.hpp"

namespace rdmanet::cni {

std::unique_ptr<ModeSettings> parse_macvlan_conf(const ModeKeys& keys) {
    const JsonFields& top = keys.top;
    const Attempt& attempt = keys.attempt;
    const bool required = keys.required;
    auto settings = std::make_unique<MacvlanConf>();
    auto& macvlan = *settings;
    attempt([&] {
        auto master = interface_name(top, "master");
        if (!master && required)
            top.invalid("master", "is required in macvlan mode: set it to the host interface the "
                                  "macvlan is created on (e.g. \"ens1f0\")");
        macvlan.master = master.value_or("");
    });
    attempt([&] {
        constexpr std::array<std::string_view, 4> kMacvlanModes = {"bridge", "private", "vepa",
                                                                   "passthru"};
        if (auto mode = top.string("macvlanMode"))
            macvlan.mode = one_of(top, "macvlanMode", *mode, kMacvlanModes);
    });
    attempt([&] {
        // The kernel keeps MTUs in an int; 0 means "the master's".
        macvlan.mtu = top.uint("mtu", 0x7fffffff).value_or(0);
    });
    attempt([&] { macvlan.mac = assignable_mac(top, "mac"); });
    return settings;
}

}  // namespace rdmanet::cni
