// PF-side VF settings: what ADD changes (in sriov-cni's order and by its rules), how
// each change is undone from the VF's saved settings, and the MAC write with verification.
#include <cerrno>
#include <thread>

#include "rdmanet/cni/modes/sriov/sriov.hpp"
#include "rdmanet/netns/error.hpp"

namespace rdmanet::cni {

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
        return vf.vlan == change.vlan && vf.qos == change.qos &&
               (change.vlan == 0 || vf.vlan_proto == change.vlan_proto);
    case Field::rate: return vf.min_tx_rate == change.min_tx_rate && vf.max_tx_rate == change.max_tx_rate;
    case Field::spoofchk: return !vf.spoofchk || *vf.spoofchk == change.enabled;
    case Field::trust: return !vf.trust || *vf.trust == change.enabled;
    case Field::link_state: return vf.link_state == change.link_state;
    case Field::node_guid: return !vf.node_guid || *vf.node_guid == change.guid;
    case Field::port_guid: return !vf.port_guid || *vf.port_guid == change.guid;
    }
    return false;
}

namespace {

// What to change when the PF driver refuses a VF setting. PF drivers differ in what they accept:
// Intel's igb (82576) has no VF link state, takes only a maximum rate up to the link speed and
// only 802.1Q tags, while mlx5 accepts all of these.
std::string refusal_hint(const VfChange& change, const std::string& pf, int err) {
    const std::string driver = "the PF driver of " + pf;
    switch (change.field) {
    case Field::link_state:
        if (err == EOPNOTSUPP) return driver + " cannot set a VF's link state (igb cannot): remove \"link_state\"";
        break;
    case Field::rate:
        if (err == EINVAL)
            return driver +
                   " refused the rate: some drivers (igb) take no \"min_tx_rate\" and a \"max_tx_rate\" "
                   "only up to the PF's current link speed, with the link up";
        if (err == EOPNOTSUPP) return driver + " cannot limit a VF's rate: remove \"min_tx_rate\" and \"max_tx_rate\"";
        break;
    case Field::vlan:
        if (err == EPROTONOSUPPORT) return driver + " tags VFs with 802.1Q only: remove \"vlanProto\": \"802.1ad\"";
        break;
    case Field::spoofchk:
        if (err == EOPNOTSUPP) return driver + " has no VF spoof checking: remove \"spoofchk\"";
        break;
    case Field::trust:
        if (err == EOPNOTSUPP) return driver + " has no VF trust setting: remove \"trust\"";
        break;
    default: break;
    }
    return "";
}

}  // namespace

void apply_verified(netns::VfControl& vfs, const std::string& pf, const VfChange& change, int attempts,
                    std::chrono::milliseconds interval) {
    try {
        vfs.apply(pf, change);
    } catch (const netns::KernelError& e) {
        const auto hint = refusal_hint(change, pf, e.errno_value());
        if (hint.empty()) throw;
        throw Error(ErrorCode::kernel_failure, e.what(), hint);
    }
    if (change.field != Field::mac) return;
    // Some PF drivers apply the admin MAC asynchronously (sriov-cni re-reads it 20 x 100 ms).
    std::string seen;
    for (int i = 0; i < attempts; ++i) {
        const auto vf = vfs.get(pf, change.vf);
        if (reflects(vf, change)) return;
        seen = vf.mac;
        std::this_thread::sleep_for(interval);
    }
    throw Error(
        ErrorCode::kernel_failure,
        "VF " + std::to_string(change.vf) + " of " + pf + " still reports MAC " + seen + " after setting " + change.mac,
        "the PF driver did not apply the MAC; check dmesg for the PF driver's reason");
}

}  // namespace rdmanet::cni
