#pragma once
// mode "macvlan": a macvlan child of a host interface, created in the pod's namespace.
#include <memory>
#include <optional>
#include <string>

#include "rdmanet/cni/config/mode_keys.hpp"
#include "rdmanet/cni/modes/backend.hpp"

namespace rdmanet::cni {

struct MacvlanConf : ModeSettingsOf<MacvlanConf> {
    std::string master;              // required on ADD/CHECK
    std::string mode = "bridge";     // macvlanMode: bridge|private|vepa|passthru
    unsigned mtu = 0;                // 0 = master's
    std::optional<std::string> mac;  // config-level MAC (lowest precedence)

    std::optional<std::string> own_mac() const override { return mac; }
};

// Keys: master (required on ADD/CHECK), macvlanMode, mtu, mac.
std::unique_ptr<ModeSettings> parse_macvlan_conf(const ModeKeys& keys);
PodLink macvlan_add(const AddRequest& req);
void macvlan_del(const DelRequest& req);
void macvlan_check(const CheckRequest& req);

}  // namespace rdmanet::cni
