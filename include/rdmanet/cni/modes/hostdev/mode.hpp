#pragma once
// mode "hostdev": any host network device (or PCI function / auxiliary device) moved into the
// pod's namespace and back.
#include <memory>
#include <string>

#include "rdmanet/cni/config/mode_keys.hpp"
#include "rdmanet/cni/modes/backend.hpp"

namespace rdmanet::cni {

struct HostdevConf : ModeSettingsOf<HostdevConf> {
    std::string device;      // netdev name
    std::string hwaddr;      // MAC of the device
    std::string kernelpath;  // absolute, under /sys/devices/
    // PCI address (or auxiliary id) after precedence: runtimeConfig.deviceID > deviceID > pciBusID.
    std::string pci_address;
};

// Keys: device, hwaddr, kernelpath, deviceID/pciBusID; on ADD/CHECK one of them is required.
std::unique_ptr<ModeSettings> parse_hostdev_conf(const ModeKeys& keys);
PodLink hostdev_add(const AddRequest& req);
void hostdev_del(const DelRequest& req);
void hostdev_check(const CheckRequest& req);

}  // namespace rdmanet::cni
