#pragma once
// What DEL of an SR-IOV VF attachment needs beyond hostdev's identity fields: which VF of which
// PF, the VF's settings before ADD and which of them ADD changed, and the InfiniBand GUID.
// Stored as the sriov mode's record in the attachment state (AttachmentState::mode_record,
// under the key "sriov" in the file).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/netns/vf.hpp"

namespace rdmanet::cni {

struct SriovState {
    std::string pf;      // PF netdev name in the host
    std::string pf_pci;  // PF PCI address
    int vf_index = -1;
    bool dpdk = false;        // userspace driver (vfio-pci ...): no netdev was moved
    bool infiniband = false;  // IB link layer: GUIDs instead of MAC/VLAN
    std::string driver;       // VF driver at ADD (the one to rebind)
    netns::VfInfo original;   // PF-side VF settings before ADD
    // PF-side fields ADD changed, in the order applied ("vlan", "mac", "rate", "spoofchk",
    // "trust", "link_state", "guid"); DEL and a failed ADD restore exactly these.
    std::vector<std::string> applied;
    unsigned original_mtu = 0;     // VF netdev MTU before ADD (0 = unknown / DPDK)
    std::string original_guid;     // GUID before ADD, when ADD set one
    std::string guid;              // GUID set by ADD ("" = none)
    std::optional<unsigned> pkey;  // recorded only (programmed by the subnet manager side)
    std::string device_info_file;  // Multus device-info file written by ADD ("" = none)

    nlohmann::json to_json() const;
    static SriovState from_json(const nlohmann::json& j);
};

nlohmann::json vf_info_to_json(const netns::VfInfo& vf);
netns::VfInfo vf_info_from_json(const nlohmann::json& j);

}  // namespace rdmanet::cni
