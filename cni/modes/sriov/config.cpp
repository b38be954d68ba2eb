// mode "sriov": the VF's PCI address and the PF-side VF settings, validated the way sriov-cni
// (pkg/config) and ib-sriov-cni do, each bad key named in a code-7 error.
#include <array>

#include "rdmanet/cni/modes/sriov/mode.hpp"
#include "rdmanet/cni/protocol/text.hpp"
#include "rdmanet/cni/protocol/value_checks.hpp"

namespace rdmanet::cni {

namespace {

constexpr auto kInvalid = ErrorCode::invalid_config;

bool all_same_octet(std::string_view guid, char digit) {
    for (std::size_t i = 0; i < guid.size(); ++i)
        if (i % 3 != 2 && (guid[i] | 0x20) != digit) return false;
    return true;
}

// Eight hex octets, not all zero (the "no GUID" value) and not all ones (what a VF without
// an assigned GUID or a vfio VF reports): both break InfiniBand addressing.
std::optional<std::string> usable_guid_problem(const std::string& guid) {
    if (!checks::is_guid(guid))
        return text::quote(guid) + " is not a GUID: write eight hex octets such as \"c2:11:22:33:44:55:66:77\"";
    if (all_same_octet(guid, '0') || all_same_octet(guid, 'f'))
        return text::quote(guid) + " is not a usable GUID: all zeros and all ones are reserved";
    return std::nullopt;
}

std::optional<bool> on_off(const JsonFields& f, std::string_view key) {
    auto value = f.string(key);
    if (!value) return std::nullopt;
    if (*value == "on") return true;
    if (*value == "off") return false;
    f.invalid(key, text::quote(*value) + " is not supported: use \"on\" or \"off\"");
}

std::optional<unsigned> bounded(const JsonFields& f, std::string_view key, unsigned max, const std::string& rule) {
    auto value = f.uint(key);
    if (value && *value > max) f.invalid(key, std::to_string(*value) + " is out of range: " + rule);
    return value;
}

// "0x8001", "8001" (hex) or a JSON integer; 16 bits whose low 15 (the key) are not zero.
std::optional<unsigned> pkey(const JsonFields& f) {
    const auto* raw = f.get("pkey");
    if (!raw) return std::nullopt;
    unsigned value = 0;
    bool ok = false;
    if (raw->is_number_unsigned()) {
        const auto n = raw->get<std::uint64_t>();
        ok = n <= 0xffff;
        value = static_cast<unsigned>(n);
    } else if (raw->is_string()) {
        std::string text = raw->get<std::string>();
        if (text.starts_with("0x") || text.starts_with("0X")) text = text.substr(2);
        ok = !text.empty() && text.size() <= 4;
        for (char c : text) {
            const bool hex = (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
            ok = ok && hex;
            if (hex) value = value * 16 + static_cast<unsigned>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
    }
    if (!ok || (value & 0x7fff) == 0)
        f.invalid("pkey",
                  "must be a 16-bit InfiniBand partition key such as \"0x8001\" (its low 15 "
                  "bits non-zero), got " +
                      raw->dump());
    return value;
}

}  // namespace

std::optional<std::string> SriovConf::requested_guid(const RuntimeConfig& runtime, const CniArgs& args) const {
    if (runtime.infiniband_guid) return runtime.infiniband_guid;
    if (args_guid) return args_guid;
    auto arg = args.get("guid");  // ib-sriov-cni's spelling; GUID too
    if (!arg) arg = args.guid();
    if (arg) {
        if (auto problem = usable_guid_problem(*arg))
            throw Error(ErrorCode::invalid_environment, "CNI_ARGS guid: " + *problem, "CNI_ARGS");
        return checks::lowercase(*arg);
    }
    return guid;
}

namespace {

// The VF's PCI address: runtimeConfig.deviceID, deviceID or pciBusID.
void read_vf_address(const ModeKeys& keys, SriovConf& sriov) {
    keys.attempt([&] {
        // Precedence runtimeConfig.deviceID > deviceID > pciBusID, as for hostdev; but a VF is
        // always a PCI function, so an auxiliary id (an SF) is refused here.
        const JsonFields& runtime_fields = runtime_config_names();
        struct Source {
            const JsonFields* fields;
            std::string_view key;
            std::optional<std::string> value;
        };
        const std::array<Source, 3> sources = {{{&runtime_fields, "deviceID", keys.conf.runtime.device_id},
                                                {&keys.top, "deviceID", keys.top.string("deviceID")},
                                                {&keys.top, "pciBusID", keys.top.string("pciBusID")}}};
        for (const auto& s : sources) {
            if (!s.value || s.value->empty() || checks::is_device_plugin_index(*s.value)) continue;
            if (!checks::is_pci_address(*s.value))
                s.fields->invalid(s.key,
                                  text::quote(*s.value) +
                                      " is not a PCI address: sriov mode needs a VF's address "
                                      "like \"0000:af:06.0\"",
                                  checks::is_auxiliary_device_id(*s.value)
                                      ? "an auxiliary device (SF) is not a VF: use mode \"hostdev\""
                                      : "");
            sriov.pci_address = checks::lowercase(*s.value);
            return;
        }
        if (keys.required)
            keys.top.invalid("deviceID",
                             "is required in sriov mode: the VF's PCI address, normally passed "
                             "by Multus from the SR-IOV device plugin (or set \"pciBusID\")");
    });
}

// "mac": the VF's MAC address, set on the PF side and on the netdev.
void read_mac(const ModeKeys& keys, SriovConf& sriov) {
    keys.attempt([&] {
        auto mac = keys.top.string("mac");
        if (mac && !checks::is_assignable_mac(*mac))
            keys.top.invalid("mac", text::quote(*mac) +
                                        " is not a usable MAC address: write six hex octets "
                                        "such as \"0a:58:0a:01:00:05\", not multicast, not all zeros");
        if (mac) sriov.mac = checks::lowercase(*mac);
    });
}

// "vlan", "vlanQoS", "vlanProto".
void read_vlan(const ModeKeys& keys, SriovConf& sriov) {
    keys.attempt([&] {
        sriov.vlan_set = keys.top.has("vlan") || keys.top.has("vlanQoS") || keys.top.has("vlanProto");
        sriov.vlan = bounded(keys.top, "vlan", 4094, "a VLAN id must be 0-4094 (0 = untagged)").value_or(0);
        sriov.vlan_qos = bounded(keys.top, "vlanQoS", 7, "the VLAN QoS (802.1p priority) must be 0-7").value_or(0);
        if (sriov.vlan == 0 && sriov.vlan_qos != 0)
            keys.top.invalid("vlanQoS", "needs a non-zero \"vlan\": QoS applies to tagged traffic only");
        if (auto proto = keys.top.string("vlanProto")) {
            const std::string lower = checks::lowercase(*proto);
            if (lower != "802.1q" && lower != "802.1ad")
                keys.top.invalid("vlanProto", text::quote(*proto) + " is not supported: use \"802.1q\" or \"802.1ad\"");
            if (lower == "802.1ad" && sriov.vlan == 0)
                keys.top.invalid("vlanProto", "\"802.1ad\" needs a non-zero \"vlan\"");
            sriov.vlan_proto = lower;
        }
    });
}

// "spoofchk", "trust" and "link_state".
void read_switches(const ModeKeys& keys, SriovConf& sriov) {
    keys.attempt([&] { sriov.spoofchk = on_off(keys.top, "spoofchk"); });
    keys.attempt([&] { sriov.trust = on_off(keys.top, "trust"); });
    keys.attempt([&] {
        auto state = keys.top.string("link_state");
        if (state && *state != "auto" && *state != "enable" && *state != "disable")
            keys.top.invalid("link_state",
                             text::quote(*state) + " is not supported: use \"auto\", \"enable\" or \"disable\"");
        sriov.link_state = state;
    });
}

// "min_tx_rate" and "max_tx_rate" (Mbps).
void read_tx_rates(const ModeKeys& keys, SriovConf& sriov) {
    keys.attempt([&] {
        sriov.min_tx_rate = keys.top.uint("min_tx_rate");
        sriov.max_tx_rate = keys.top.uint("max_tx_rate");
        if (sriov.min_tx_rate && sriov.max_tx_rate && *sriov.max_tx_rate != 0 &&
            *sriov.min_tx_rate > *sriov.max_tx_rate)
            keys.top.invalid("min_tx_rate", std::to_string(*sriov.min_tx_rate) + " is above max_tx_rate " +
                                                std::to_string(*sriov.max_tx_rate) +
                                                ": the guaranteed rate cannot exceed the limit (Mbps)");
    });
}

// The InfiniBand GUID a network may ask for: "guid", "args.cni.guid", runtimeConfig.infinibandGUID.
void read_guids(const ModeKeys& keys, SriovConf& sriov) {
    keys.attempt([&] {
        auto guid = keys.top.string("guid");
        if (guid) {
            if (auto problem = usable_guid_problem(*guid)) keys.top.invalid("guid", *problem);
            sriov.guid = checks::lowercase(*guid);
        }
    });
    keys.attempt([&] {
        // args.cni.guid: what ib-sriov-cni reads after runtimeConfig.infinibandGUID (Multus puts a
        // pod's "cni-args" there).
        const auto* args = keys.top.object("args");
        if (!args) return;
        const JsonFields args_fields(*args, keys.top.name("args"), kInvalid);
        const auto* cni = args_fields.object("cni");
        if (!cni) return;
        const JsonFields cni_fields(*cni, args_fields.name("cni"), kInvalid);
        auto guid = cni_fields.string("guid");
        if (!guid) return;
        if (auto problem = usable_guid_problem(*guid)) cni_fields.invalid("guid", *problem);
        sriov.args_guid = checks::lowercase(*guid);
    });
    keys.attempt([&] {
        // runtimeConfig.infinibandGUID passed the shape check in parse_runtime_config; a VF
        // also refuses the reserved values.
        if (!keys.conf.runtime.infiniband_guid) return;
        if (auto problem = usable_guid_problem(*keys.conf.runtime.infiniband_guid))
            runtime_config_names().invalid("infinibandGUID", *problem);
    });
}

// "pkey" and "mtu".
void read_pkey_and_mtu(const ModeKeys& keys, SriovConf& sriov) {
    keys.attempt([&] { sriov.pkey = pkey(keys.top); });
    keys.attempt([&] {
        auto mtu = keys.top.uint("mtu");
        if (mtu && *mtu != 0 && (*mtu < 68 || *mtu > 65535))
            keys.top.invalid("mtu", std::to_string(*mtu) + " is out of range: use 68-65535, or 0 to keep the VF's MTU");
        sriov.mtu = mtu.value_or(0);
    });
}

}  // namespace

std::unique_ptr<ModeSettings> parse_sriov_conf(const ModeKeys& keys) {
    auto settings = std::make_unique<SriovConf>();
    auto& sriov = *settings;
    read_vf_address(keys, sriov);
    read_mac(keys, sriov);
    read_vlan(keys, sriov);
    read_switches(keys, sriov);
    read_tx_rates(keys, sriov);
    read_guids(keys, sriov);
    read_pkey_and_mtu(keys, sriov);
    return settings;
}

}  // namespace rdmanet::cni
