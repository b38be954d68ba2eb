// The DRANET release the provider answers: see dranet_version.hpp.
#include "rdmanet/cni/node/dranet/dranet_version.hpp"

#include <charconv>

namespace rdmanet::cni::node::dranet {

namespace {

std::optional<unsigned> number(std::string_view& rest) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (ec != std::errc() || end == rest.data() || value > 1000) return std::nullopt;
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
    return value;
}

}  // namespace

std::string DranetVersion::str() const {
    return main_branch ? std::string("main") : std::to_string(major) + "." + std::to_string(minor);
}

std::optional<DranetVersion> parse_dranet_version(std::string_view text) {
    if (text == "main") return DranetVersion{1, 4, true};
    if (!text.empty() && text.front() == 'v') text.remove_prefix(1);
    DranetVersion v;
    const auto major = number(text);
    if (!major || text.empty() || text.front() != '.') return std::nullopt;
    text.remove_prefix(1);
    const auto minor = number(text);
    if (!minor) return std::nullopt;
    if (!text.empty() && text.front() == '.') {
        text.remove_prefix(1);
        if (!number(text)) return std::nullopt;
    }
    // A pre-release or build suffix ("-rc.1", "+abc") belongs to the same minor version.
    if (!text.empty() && text.front() != '-' && text.front() != '+') return std::nullopt;
    v.major = *major;
    v.minor = *minor;
    if (v.major < 1 || (v.major == 1 && v.minor < 4)) return std::nullopt;
    return v;
}

NetworkConfigAnswer answer_for(const DranetVersion& version, NetworkConfigAnswer answer) {
    if (!version.has_arp_fields()) {
        answer.arp_ignore.reset();
        answer.arp_announce.reset();
    }
    return answer;
}

std::vector<std::string> describe_dranet(const DranetVersion& version) {
    std::vector<std::string> lines;
    if (version.has_arp_fields()) {
        lines.push_back("assuming DRANET " + version.str() +
                        " (--dranet-version): the answer carries the addresses, routes, rules and "
                        "interface.arpIgnore/arpAnnounce, all applied by DRANET");
    } else {
        lines.push_back("assuming DRANET " + version.str() +
                        " (--dranet-version): the answer carries the addresses, routes and rules; DRANET " +
                        version.str() +
                        " has no interface.arpIgnore/arpAnnounce and drops unknown fields, so they are "
                        "not sent");
        lines.push_back("lost with DRANET " + version.str() +
                        ": the profiles' arp_ignore/arp_announce (1 and 2 with policyRouting). A pod with several "
                        "rails in one subnet answers ARP for every rail on every rail (ARP flux) unless the pod sets "
                        "spec.securityContext.sysctls net.ipv4.conf.all.arp_ignore=1 and "
                        "net.ipv4.conf.all.arp_announce=2 (the kubelet allows them with --allowed-unsafe-sysctls), "
                        "or DRANET is newer than 1.4 (then run the provider with --dranet-version main or 1.5)");
    }
    lines.push_back("not applied by any DRANET: rp_filter (no field: the pod namespace's own value applies)");
    return lines;
}

}  // namespace rdmanet::cni::node::dranet
