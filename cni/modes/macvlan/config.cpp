// mode "macvlan": its configuration keys.
#include <array>

#include "rdmanet/cni/modes/macvlan/mode.hpp"

namespace rdmanet::cni {

std::unique_ptr<ModeSettings> parse_macvlan_conf(const ModeKeys& keys) {
    auto settings = std::make_unique<MacvlanConf>();
    auto& macvlan = *settings;
    keys.attempt([&] {
        auto master = interface_name(keys.top, "master");
        if (!master && keys.required)
            keys.top.invalid("master",
                             "is required in macvlan mode: set it to the host interface the "
                             "macvlan is created on (e.g. \"ens1f0\")");
        macvlan.master = master.value_or("");
    });
    keys.attempt([&] {
        constexpr std::array<std::string_view, 4> kMacvlanModes = {"bridge", "private", "vepa", "passthru"};
        if (auto mode = keys.top.string("macvlanMode"))
            macvlan.mode = one_of(keys.top, "macvlanMode", *mode, kMacvlanModes);
    });
    keys.attempt([&] {
        // The kernel keeps MTUs in an int; 0 means "the master's".
        macvlan.mtu = keys.top.uint("mtu", 0x7fffffff).value_or(0);
    });
    keys.attempt([&] { macvlan.mac = assignable_mac(keys.top, "mac"); });
    return settings;
}

}  // namespace rdmanet::cni
