#pragma once
// mode "ipoib": a child of an InfiniBand parent, created as ipoib-cni creates it: in the host
// under a temporary name, then moved and renamed in one call; DEL deletes it.
#include <memory>
#include <optional>
#include <string>

#include "rdmanet/cni/config/mode_keys.hpp"
#include "rdmanet/cni/modes/backend.hpp"

namespace rdmanet::cni {

struct IpoibConf : ModeSettingsOf<IpoibConf> {
    std::string master;               // required on ADD/CHECK: the IPoIB parent netdev
    std::optional<unsigned> pkey;     // 1..0xffff except 0x8000; nullopt = the parent's
    std::optional<std::string> mode;  // ipoibMode: datagram|connected; nullopt = the parent's
    unsigned mtu = 0;                 // 0 = the parent's; never above it
};

// Keys: master (required on ADD/CHECK), pkey, ipoibMode, mtu.
std::unique_ptr<ModeSettings> parse_ipoib_conf(const ModeKeys& keys);
PodLink ipoib_add(const AddRequest& req);
void ipoib_del(const DelRequest& req);
void ipoib_check(const CheckRequest& req);

}  // namespace rdmanet::cni
