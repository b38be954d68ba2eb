#pragma once
// mode "sriov": an SR-IOV VF found by PCI address, its PF-side settings saved, applied and
// restored (as sriov-cni and ib-sriov-cni do), its netdev moved like hostdev (DPDK VFs: nothing
// moved); InfiniBand VFs get their GUID set and their driver rebound. DEL returns everything and
// restores exactly what ADD changed. The backend's pieces are in sriov.hpp.
#include <memory>
#include <optional>
#include <string>

#include "rdmanet/cni/config/mode_keys.hpp"
#include "rdmanet/cni/modes/backend.hpp"

namespace rdmanet::cni {

// Optional settings are nullopt when the config does not set them: only
// those are applied on ADD and reset on DEL, except the VLAN, which is always applied (0 when
// unset) so that a VF left tagged by an earlier pod is cleaned, as sriov-cni does.
struct SriovConf : ModeSettingsOf<SriovConf> {
    // PCI address after precedence runtimeConfig.deviceID > deviceID > pciBusID.
    std::string pci_address;
    std::optional<std::string> mac;         // admin + effective MAC of the VF
    unsigned vlan = 0;                      // 0-4094, 0 = no VLAN
    unsigned vlan_qos = 0;                  // 0-7, needs vlan != 0
    std::string vlan_proto = "802.1q";      // 802.1q | 802.1ad (the latter needs vlan != 0)
    bool vlan_set = false;                  // any of vlan/vlanQoS/vlanProto given
    std::optional<bool> spoofchk;           // "on" | "off"
    std::optional<bool> trust;              // "on" | "off"
    std::optional<std::string> link_state;  // auto | enable | disable
    std::optional<unsigned> min_tx_rate;    // Mbps
    std::optional<unsigned> max_tx_rate;    // Mbps, 0 = no limit; >= min_tx_rate
    std::optional<std::string> guid;        // InfiniBand GUID from the config (lowest precedence)
    std::optional<std::string> args_guid;   // args.cni.guid (the CNI "args" convention)
    std::optional<unsigned> pkey;           // InfiniBand partition key, recorded only
    unsigned mtu = 0;                       // 0 = leave the VF's MTU

    // runtimeConfig.infinibandGUID > args.cni.guid > CNI_ARGS GUID > guid; nullopt when none.
    // Lower-case. ib-sriov-cni reads runtimeConfig.infinibandGUID > args.cni.guid; CNI_ARGS and
    // the config key rank below, as the CNI conventions rank runtimeConfig > args > CNI_ARGS.
    // Throws Error(invalid_environment) for a CNI_ARGS GUID
    // that is not a usable GUID (the config's, args.cni's included, are checked by parse_net_conf).
    std::optional<std::string> requested_guid(const RuntimeConfig& runtime, const CniArgs& args) const;

    std::optional<std::string> own_mac() const override { return mac; }
};

// Keys: deviceID/pciBusID (a VF's PCI address, required on ADD/CHECK), mac, vlan, vlanQoS,
// vlanProto, spoofchk, trust, link_state, min_tx_rate, max_tx_rate, guid, args.cni.guid, pkey,
// mtu; validated the way sriov-cni (pkg/config) and ib-sriov-cni do.
std::unique_ptr<ModeSettings> parse_sriov_conf(const ModeKeys& keys);
PodLink sriov_add(const AddRequest& req);
void sriov_del(const DelRequest& req);
void sriov_check(const CheckRequest& req);

}  // namespace rdmanet::cni
