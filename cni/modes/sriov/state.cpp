#include "rdmanet/cni/modes/sriov/state.hpp"

namespace rdmanet::cni {

namespace {
// JSON null for "the driver did not report it".
nlohmann::json optional_bool(const std::optional<bool>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }
std::optional<bool> read_optional_bool(const nlohmann::json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_boolean()) return std::nullopt;
    return it->get<bool>();
}
}  // namespace

nlohmann::json vf_info_to_json(const netns::VfInfo& vf) {
    nlohmann::json j = {
        {"index", vf.index},
        {"mac", vf.mac},
        {"vlan", vf.vlan},
        {"qos", vf.qos},
        {"vlanProto", vf.vlan_proto},
        {"minTxRate", vf.min_tx_rate},
        {"maxTxRate", vf.max_tx_rate},
        {"spoofchk", optional_bool(vf.spoofchk)},
        {"trust", optional_bool(vf.trust)},
        {"linkState", static_cast<unsigned>(vf.link_state)},
    };
    // GUIDs as text: a u64 does not survive every JSON reader.
    if (vf.node_guid) j["nodeGuid"] = netns::format_guid(*vf.node_guid);
    if (vf.port_guid) j["portGuid"] = netns::format_guid(*vf.port_guid);
    return j;
}

netns::VfInfo vf_info_from_json(const nlohmann::json& j) {
    netns::VfInfo vf;
    if (!j.is_object()) return vf;
    vf.index = j.value("index", 0u);
    vf.mac = j.value("mac", vf.mac);
    vf.vlan = j.value("vlan", 0u);
    vf.qos = j.value("qos", 0u);
    vf.vlan_proto = j.value("vlanProto", netns::kVlanProto8021Q);
    vf.min_tx_rate = j.value("minTxRate", 0u);
    vf.max_tx_rate = j.value("maxTxRate", 0u);
    vf.spoofchk = read_optional_bool(j, "spoofchk");
    vf.trust = read_optional_bool(j, "trust");
    vf.link_state = static_cast<netns::VfLinkState>(j.value("linkState", 0u));
    if (j.contains("nodeGuid")) vf.node_guid = netns::parse_guid(j.value("nodeGuid", ""));
    if (j.contains("portGuid")) vf.port_guid = netns::parse_guid(j.value("portGuid", ""));
    return vf;
}

nlohmann::json SriovState::to_json() const {
    nlohmann::json j = {
        {"pf", pf},
        {"pfPci", pf_pci},
        {"vfIndex", vf_index},
        {"dpdk", dpdk},
        {"infiniband", infiniband},
        {"driver", driver},
        {"original", vf_info_to_json(original)},
        {"applied", applied},
        {"originalMtu", original_mtu},
        {"originalGuid", original_guid},
        {"guid", guid},
        {"deviceInfoFile", device_info_file},
    };
    if (pkey) j["pkey"] = *pkey;
    return j;
}

SriovState SriovState::from_json(const nlohmann::json& j) {
    SriovState s;
    if (!j.is_object()) return s;
    s.pf = j.value("pf", "");
    s.pf_pci = j.value("pfPci", "");
    s.vf_index = j.value("vfIndex", -1);
    s.dpdk = j.value("dpdk", false);
    s.infiniband = j.value("infiniband", false);
    s.driver = j.value("driver", "");
    if (j.contains("original")) s.original = vf_info_from_json(j["original"]);
    if (j.contains("applied") && j["applied"].is_array())
        for (const auto& field : j["applied"])
            if (field.is_string()) s.applied.push_back(field.get<std::string>());
    s.original_mtu = j.value("originalMtu", 0u);
    s.original_guid = j.value("originalGuid", "");
    s.guid = j.value("guid", "");
    if (j.contains("pkey") && j["pkey"].is_number_unsigned()) s.pkey = j["pkey"].get<unsigned>();
    s.device_info_file = j.value("deviceInfoFile", "");
    return s;
}

}  // namespace rdmanet::cni
