// VfChange constructors and GUID text conversion (pure).
#include <cstdio>

#include "rdmanet/netns/vf.hpp"

namespace rdmanet::netns {

VfChange VfChange::set_mac(unsigned vf, std::string mac) {
    VfChange c;
    c.field = Field::mac;
    c.vf = vf;
    c.mac = std::move(mac);
    return c;
}

VfChange VfChange::set_vlan(unsigned vf, unsigned vlan, unsigned qos, std::uint16_t proto) {
    VfChange c;
    c.field = Field::vlan;
    c.vf = vf;
    c.vlan = vlan;
    c.qos = qos;
    c.vlan_proto = proto;
    return c;
}

VfChange VfChange::set_rate(unsigned vf, unsigned min_tx_rate, unsigned max_tx_rate) {
    VfChange c;
    c.field = Field::rate;
    c.vf = vf;
    c.min_tx_rate = min_tx_rate;
    c.max_tx_rate = max_tx_rate;
    return c;
}

VfChange VfChange::set_spoofchk(unsigned vf, bool on) {
    VfChange c;
    c.field = Field::spoofchk;
    c.vf = vf;
    c.enabled = on;
    return c;
}

VfChange VfChange::set_trust(unsigned vf, bool on) {
    VfChange c;
    c.field = Field::trust;
    c.vf = vf;
    c.enabled = on;
    return c;
}

VfChange VfChange::set_link_state(unsigned vf, VfLinkState state) {
    VfChange c;
    c.field = Field::link_state;
    c.vf = vf;
    c.link_state = state;
    return c;
}

VfChange VfChange::set_node_guid(unsigned vf, std::uint64_t guid) {
    VfChange c;
    c.field = Field::node_guid;
    c.vf = vf;
    c.guid = guid;
    return c;
}

VfChange VfChange::set_port_guid(unsigned vf, std::uint64_t guid) {
    VfChange c = set_node_guid(vf, guid);
    c.field = Field::port_guid;
    return c;
}

std::string VfChange::describe() const {
    auto on_off = [](bool on) { return std::string(on ? "on" : "off"); };
    switch (field) {
    case Field::mac: return "mac " + mac;
    case Field::vlan: {
        char proto[8];
        std::snprintf(proto, sizeof proto, "%04x", vlan_proto);
        return "vlan " + std::to_string(vlan) + " qos " + std::to_string(qos) + " proto 0x" + proto;
    }
    case Field::rate:
        return "min_tx_rate " + std::to_string(min_tx_rate) + " max_tx_rate " + std::to_string(max_tx_rate);
    case Field::spoofchk: return "spoofchk " + on_off(enabled);
    case Field::trust: return "trust " + on_off(enabled);
    case Field::link_state: {
        const char* names[] = {"auto", "enable", "disable"};
        const auto i = static_cast<unsigned>(link_state);
        return std::string("link_state ") + (i < 3 ? names[i] : "?");
    }
    case Field::node_guid: return "node_guid " + format_guid(guid);
    case Field::port_guid: return "port_guid " + format_guid(guid);
    }
    return "?";
}

std::optional<std::uint64_t> parse_guid(const std::string& text) {
    if (text.size() != 23) return std::nullopt;
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < 8; ++i) {
        if (i < 7 && text[i * 3 + 2] != ':') return std::nullopt;
        unsigned byte = 0;
        for (std::size_t j = 0; j < 2; ++j) {
            const char c = text[i * 3 + j];
            unsigned d;
            if (c >= '0' && c <= '9')
                d = c - '0';
            else if (c >= 'a' && c <= 'f')
                d = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F')
                d = c - 'A' + 10;
            else
                return std::nullopt;
            byte = byte << 4 | d;
        }
        value = value << 8 | byte;
    }
    return value;
}

std::string format_guid(std::uint64_t guid) {
    char out[24];
    std::snprintf(out, sizeof out, "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x", unsigned(guid >> 56 & 0xff),
                  unsigned(guid >> 48 & 0xff), unsigned(guid >> 40 & 0xff), unsigned(guid >> 32 & 0xff),
                  unsigned(guid >> 24 & 0xff), unsigned(guid >> 16 & 0xff), unsigned(guid >> 8 & 0xff),
                  unsigned(guid & 0xff));
    return out;
}

}  // namespace rdmanet::netns
