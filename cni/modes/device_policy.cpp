// The device side of the node policy: which host links the node itself needs (never moved into a
// pod), devices attached to other pods, and the admin's allow-lists.
#include <fnmatch.h>
#include <fstream>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/modes/device_policy.hpp"
#include "rdmanet/netns/namespace.hpp"
#include "rdmanet/cni/protocol/text.hpp"
#include "rdmanet/cni/policy/checks.hpp"

namespace rdmanet::cni {

namespace {

bool glob_match(const std::vector<std::string>& patterns, const std::string& value) {
    for (const auto& pattern : patterns)
        if (::fnmatch(pattern.c_str(), value.c_str(), 0) == 0) return true;
    return false;
}

std::string read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

bool is_link_local(const base::IpNetwork& net) {
    const auto& ip = net.address;
    if (ip.is_v4()) return (ip.to_u128() >> 16) == ((169u << 8) | 254u);  // 169.254.0.0/16
    return (ip.to_u128() >> 118) == (0xfe80 >> 6);                        // fe80::/10
}

// Kinds whose IFLA_LINK names a lower device in the same netns (a veth's names its peer, which
// may live in another netns, so it is not followed).
bool stacks_on_parent(const std::string& kind) {
    static const std::set<std::string> kinds = {"vlan", "macvlan", "macvtap", "ipvlan", "ipvtap", "ipoib"};
    return kinds.count(kind) > 0;
}

// sysfs class/net/<name>/master -> the bridge or bond it is a port of; "" when none.
std::string master_of(const netns::Sysfs& sysfs, const std::string& name) {
    char buf[256];
    const std::string link = sysfs.root() + "/class/net/" + name + "/master";
    const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
    if (n <= 0) return "";
    std::string target(buf, static_cast<std::size_t>(n));
    return target.substr(target.rfind('/') + 1);
}

std::string non_link_local_address(netns::Rtnl& host, int index) {
    for (const auto& net : host.addresses(index))
        if (!is_link_local(net)) return net.str();
    return "";
}

std::string policy_name(const NodePolicy& policy) {
    return policy.source.empty() ? "the built-in node policy" : "node policy " + policy.source;
}

// A state that records `link` as its device: by PCI address when both know one, else by host
// name and MAC.
bool state_holds(const AttachmentState& state, const HostDevice& device) {
    if (!state.pci_address.empty() && !device.pci_address.empty()) return state.pci_address == device.pci_address;
    return !state.host_ifname.empty() && state.host_ifname == device.link.name && state.host_mac == device.link.mac;
}

}  // namespace

HostDevice describe_host_device(const netns::Sysfs& sysfs, const netns::LinkInfo& link) {
    HostDevice d;
    d.link = link;
    d.pci_address = sysfs.netdev_pci_address(link.name).value_or("");
    if (!d.pci_address.empty()) {
        const std::string dir = sysfs.root() + "/bus/pci/devices/" + d.pci_address;
        std::string vendor = read_first_line(dir + "/vendor");
        if (vendor.starts_with("0x")) vendor = vendor.substr(2);
        d.vendor_id = vendor;
        struct stat st {};
        d.is_vf = ::lstat((dir + "/physfn").c_str(), &st) == 0;
    }
    return d;
}

std::optional<std::string> node_uplink_reason(netns::Rtnl& host, const netns::Sysfs& sysfs,
                                              const netns::LinkInfo& link) {
    if (link.name == "lo" || link.index == 1) return "it is the loopback device";
    if (auto address = non_link_local_address(host, link.index); !address.empty())
        return "it holds the node address " + address;

    std::set<int> default_devices;
    for (const auto& route : host.routes(0))
        if (!route.dst && route.ifindex > 0) default_devices.insert(route.ifindex);
    if (default_devices.count(link.index)) return "it holds the node's default route";

    // Lower devices of a default-route device: moving them takes the uplink down with them.
    for (int index : default_devices) {
        auto upper = host.link_by_index(index);
        for (int depth = 0; upper && depth < 8; ++depth) {
            const std::string master = master_of(sysfs, link.name);
            if (!master.empty() && master == upper->name)
                return "it is a port of " + upper->name + ", which holds the node's default route";
            if (!stacks_on_parent(upper->kind) || upper->parent_index <= 0) break;
            if (upper->parent_index == link.index)
                return "it is the lower device of " + upper->name + ", which holds the node's default route";
            upper = host.link_by_index(upper->parent_index);
        }
    }
    // A port of a bridge/bond that holds the node's addresses (no default route of its own).
    if (const std::string master = master_of(sysfs, link.name); !master.empty()) {
        if (auto m = host.link_by_name(master); m && !non_link_local_address(host, m->index).empty())
            return "it is a port of " + master + ", which holds a node address";
    }
    return std::nullopt;
}

std::string device_rules_mismatch(const DeviceRules& rules, const HostDevice& device, bool is_master) {
    const std::string what = is_master ? "master" : "device";
    if (!rules.names.empty()) {
        bool ok = glob_match(rules.names, device.link.name);
        for (const auto& alt : device.link.altnames) ok = ok || glob_match(rules.names, alt);
        if (!ok) return what + " name " + text::quote(device.link.name) + " matches none of the allowed names";
    }
    if (!rules.pci_addresses.empty() && !glob_match(rules.pci_addresses, device.pci_address))
        return device.pci_address.empty()
                   ? what + " " + text::quote(device.link.name) +
                         " is not a PCI function, and only PCI addresses are allowed"
                   : what + " PCI address " + device.pci_address + " matches none of the allowed PCI addresses";
    if (!rules.vendor_ids.empty() && !glob_match(rules.vendor_ids, device.vendor_id))
        return what + " " + text::quote(device.link.name) + " has vendor id " +
               (device.vendor_id.empty() ? std::string("(none)") : device.vendor_id) +
               ", not one of the allowed vendor ids";
    if (!is_master && rules.vfs_only && !device.is_vf)
        return what + " " + text::quote(device.link.name) + " is not an SR-IOV virtual function (vfsOnly)";
    return "";
}

void check_device_move(const NodePolicy& policy, netns::Rtnl& host, const netns::Sysfs& sysfs,
                       const netns::LinkInfo& link, std::string_view mode, const StateStore& store,
                       const AttachmentKey& self) {
    check_mode_allowed(policy, mode);
    const std::string name = text::quote(link.name);
    if (auto reason = node_uplink_reason(host, sysfs, link))
        refuse(policy, ErrorCode::device_busy,
               "refusing to move " + name + " into a pod: " + *reason + " (the node needs it)",
               "choose a device the node does not use itself");

    const HostDevice device = describe_host_device(sysfs, link);
    for (const auto& state : store.list_all()) {
        if (state.container_id == self.container_id && state.ifname == self.ifname) continue;
        if (!state_holds(state, device)) continue;
        if (state.netns.empty() || netns::probe_netns(state.netns) != netns::NetnsStatus::ok) continue;  // stale
        refuse(policy, ErrorCode::device_busy,
               "device " + name + " is attached to another pod (container " + state.container_id + ", network " +
                   state.network + ", interface " + state.ifname + ")",
               "a device can serve one pod at a time");
    }
    if (auto mismatch = device_rules_mismatch(policy.devices, device, false); !mismatch.empty())
        refuse(policy, ErrorCode::invalid_config, mismatch + " (" + policy_name(policy) + ", key devices)",
               "use a device the node admin allows, or ask them to allow this one");
}

void check_master(const NodePolicy& policy, netns::Rtnl& host, const netns::Sysfs& sysfs, const netns::LinkInfo& master,
                  std::string_view mode) {
    check_mode_allowed(policy, mode);
    const std::string name = text::quote(master.name);
    if (master.name == "lo" || master.index == 1)
        refuse(policy, ErrorCode::invalid_config, "master " + name + " is the loopback device",
               "set the master to a physical uplink");
    if (!policy.masters.allow_uplink) {
        if (auto reason = node_uplink_reason(host, sysfs, master))
            refuse(policy, ErrorCode::invalid_config,
                   "master " + name + " may not carry pod interfaces: " + *reason + " and " + policy_name(policy) +
                       " sets masters.allowUplink to false",
                   "use a dedicated uplink, or ask the node admin");
    }
    const HostDevice device = describe_host_device(sysfs, master);
    if (auto mismatch = device_rules_mismatch(policy.masters, device, true); !mismatch.empty())
        refuse(policy, ErrorCode::invalid_config, mismatch + " (" + policy_name(policy) + ", key masters)",
               "use a master the node admin allows, or ask them to allow this one");
}

}  // namespace rdmanet::cni
