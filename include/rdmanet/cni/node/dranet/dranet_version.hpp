#pragma once
// Which DRANET the provider answers. DRANET's request carries no version, and DRANET decodes the
// provider's answer leniently (Go's encoding/json: unknown members are dropped without a word),
// so a field the running DRANET lacks is lost silently. The admin names the release
// (`--dranet-version`); the provider sends only what that release applies and says at start what
// is lost.
//
// What differs between the releases (read in DRANET's source):
//   - 1.4.x (v1.4.0 is the newest release): NetworkConfig.interface has no arpIgnore/arpAnnounce
//     and no sysctl field at all; the only per-interface sysctl it has a field for is
//     `forwarding`. The per-rail ARP settings of a profile cannot be delivered through the answer.
//   - later (its main branch since 2026-08, the next release): interface.arpIgnore (0-3, 8) and
//     interface.arpAnnounce (0-2), written to net.ipv4.conf.<ifname>.* in the pod.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/cni/node/dranet/wire.hpp"

namespace rdmanet::cni::node::dranet {

struct DranetVersion {
    unsigned major = 1;
    unsigned minor = 4;
    bool main_branch = false;  // "main": a build of DRANET's main branch (newer than every release)

    // interface.arpIgnore / interface.arpAnnounce are fields of its NetworkConfig.
    bool has_arp_fields() const { return main_branch || major > 1 || (major == 1 && minor > 4); }
    std::string str() const;
};

// The default when --dranet-version is not given: the newest DRANET release, 1.4.
inline constexpr DranetVersion kDefaultDranetVersion{};

// "1.4", "1.4.0", "v1.5.0", "1.5.0-rc.1", "main". nullopt for anything else (and for releases
// before 1.4: the profile-provider webhook did not exist before it).
std::optional<DranetVersion> parse_dranet_version(std::string_view text);

// The answer as the named DRANET applies it: the members it has no field for are left out.
NetworkConfigAnswer answer_for(const DranetVersion& version, NetworkConfigAnswer answer);

// The start log: one line each for what the provider assumes and what is lost with it.
std::vector<std::string> describe_dranet(const DranetVersion& version);

}  // namespace rdmanet::cni::node::dranet
