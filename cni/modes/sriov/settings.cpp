// PF-side VF settings: what ADD changes (in sriov-cni's order and by its rules), how
// each change is undone from the VF's saved settings, and the MAC write with verification.
#include <thread>

#include "rdmanet/cni/modes/sriov/sriov.hpp"

namespace rdmanet::cni::sriov {

using netns::VfChange;
using Field = VfChange::Field;

std::string field_name(Field field) {
    switch (field) {
    case Field::mac: return "mac";
    case Field::vlan: return "vlan";
    case Field::rate: return "rate";
    case Field::spoofchk: return "spoofchk";
    case Field::trust: return "trust";
    case Field::link_state: return "link_state";
    case Field::node_guid: return "node_guid";
    case Field::port_guid: return "port_guid";
    }
    return "?";
}

std::vector<VfChange> plan_apply(const SriovConf& conf, const std::optional<std::string>& mac, unsigned vf,
                                 bool infiniband) {
    std::vector<VfChange> plan;
    if (infiniband) {
        // An IB VF has no Ethernet MAC or 802.1Q tag; its identity is the GUID, its isolation
        // the partition key.
        if (conf.vlan_set)
            throw Error(ErrorCode::invalid_config, "vlan, vlanQoS and vlanProto do not apply to InfiniBand VFs",
                        "remove them; InfiniBand isolation is the partition key (\"pkey\")");
        if (mac)
            throw Error(ErrorCode::invalid_config, "an InfiniBand VF has no Ethernet MAC to set",
                        "remove \"mac\" (or runtimeConfig.mac / CNI_ARGS MAC); set \"guid\" instead");
    } else {
        // Always written, 0 when unset: a VF left tagged by an earlier pod is cleaned (sriov-cni).
        const std::uint16_t proto = conf.vlan_proto == "802.1ad" ? netns::kVlanProto8021AD : netns::kVlanProto8021Q;
        plan.push_back(VfChange::set_vlan(vf, conf.vlan, conf.vlan_qos, proto));
        if (mac) plan.push_back(VfChange::set_mac(vf, *mac));
    }
    if (conf.min_tx_rate || conf.max_tx_rate)
        plan.push_back(VfChange::set_rate(vf, conf.min_tx_rate.value_or(0), conf.max_tx_rate.value_or(0)));
    if (conf.spoofchk) plan.push_back(VfChange::set_spoofchk(vf, *conf.spoofchk));
    if (conf.trust) plan.push_back(VfChange::set_trust(vf, *conf.trust));
    if (conf.link_state) {
        const auto state = *conf.link_state == "enable"    ? netns::VfLinkState::enable
                           : *conf.link_state == "disable" ? netns::VfLinkState::disable
                                                           : netns::VfLinkState::auto_;
        plan.push_back(VfChange::set_link_state(vf, state));
    }
    return plan;
}

std::optional<VfChange> restore_change(const std::string& field, const netns::VfInfo& original, unsigned vf) {
    if (field == "vlan") return VfChange::set_vlan(vf, original.vlan, original.qos, original.vlan_proto);
    if (field == "mac") return VfChange::set_mac(vf, original.mac);
    if (field == "rate") return VfChange::set_rate(vf, original.min_tx_rate, original.max_tx_rate);
    if (field == "spoofchk" && original.spoofchk) return VfChange::set_spoofchk(vf, *original.spoofchk);
    if (field == "trust" && original.trust) return VfChange::set_trust(vf, *original.trust);
    if (field == "link_state") return VfChange::set_link_state(vf, original.link_state);
    return std::nullopt;
}

bool reflects(const netns::VfInfo& vf, const VfChange& change) {
    switch (change.field) {
    case Field::mac: return vf.mac == change.mac;
    case Field::vlan:
        return vf.vlan == change.vlan && vf.qos == change.qos && (change.vlan == 0 || vf.vlan_proto == change.vlan_proto);
    case Field::rate: return vf.min_tx_rate == change.min_tx_rate && vf.max_tx_rate == change.max_tx_rate;
    case Field::spoofchk: return !vf.spoofchk || *vf.spoofchk == change.enabled;
    case Field::trust: return !vf.trust || *vf.trust == change.enabled;
    case Field::link_state: return vf.link_state == change.link_state;
    case Field::node_guid: return !vf.node_guid || *vf.node_guid == change.guid;
    case Field::port_guid: return !vf.port_guid || *vf.port_guid == change.guid;
    }
    return false;
}

void apply_verified(netns::VfControl& vfs, const std::string& pf, const VfChange& change, int attempts,
                    std::chrono::milliseconds interval) {
    vfs.apply(pf, change);
    if (change.field != Field::mac) return;
    // Some PF drivers apply the admin MAC asynchronously (sriov-cni re-reads it 20 x 100 ms).
    std::string seen;
    for (int i = 0; i < attempts; ++i) {
        const auto vf = vfs.get(pf, change.vf);
        if (reflects(vf, change)) return;
        seen = vf.mac;
        std::this_thread::sleep_for(interval);
    }
    throw Error(ErrorCode::kernel_failure,
                "VF " + std::to_string(change.vf) + " of " + pf + " still reports MAC " + seen + " after setting " +
                    change.mac,
                "the PF driver did not apply the MAC; check dmesg for the PF driver's reason");
}

}  // namespace rdmanet::cni::sriov
