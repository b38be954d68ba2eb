#pragma once
// A recording fake of PF-side VF netlink that models what the kernel and a PF driver do with
// RTM_SETLINK IFLA_VFINFO_LIST (net/core/rtnetlink.c do_setvfinfo, mlx5):
//   - unknown PF -> ENODEV; VF index beyond the PF's VFs -> EINVAL;
//   - IFLA_VF_VLAN: vlan > 4095 or qos > 7 -> EINVAL; 802.1ad is accepted (mlx5 does);
//   - IFLA_VF_MAC: multicast MAC -> EINVAL; all-zero clears the admin MAC;
//   - IFLA_VF_RATE: max != 0 and min > max -> EINVAL;
//   - IFLA_VF_LINK_STATE > 2 -> EINVAL;
//   - an InfiniBand PF refuses MAC and VLAN (EOPNOTSUPP) and keeps node/port GUIDs per VF; an
//     Ethernet PF refuses GUIDs (EOPNOTSUPP);
//   - a PF that does not report spoofchk/trust (-1 in ifla_vf_info) can be modelled;
//   - driver "igb" (Intel 82576, as the kernel lab runs it on QEMU's emulation; igb_main.c):
//     no ndo_set_vf_link_state -> link_state EOPNOTSUPP; a non-zero min_tx_rate or a
//     max_tx_rate above the 1000 Mb/s link -> EINVAL; a non-802.1Q VLAN protocol ->
//     EPROTONOSUPPORT. The default model (driver "") accepts all of these, as mlx5 does.
// Every accepted change is appended to `log`; failures can be injected per field or per call.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/netns/vf.hpp"

namespace rdmanet::test {

class FakeVfControl : public netns::VfControl {
public:
    struct Pf {
        bool infiniband = false;
        std::string driver;  // "" (mlx5-like: accepts every VF setting) or "igb"
        std::vector<netns::VfInfo> vfs;
    };

    // A PF with `num_vfs` VFs in their power-on state: no admin MAC, no VLAN, no rate, spoofchk
    // on, trust off, link state auto; IB VFs have a distinct non-zero node/port GUID.
    void add_pf(const std::string& pf, unsigned num_vfs, bool infiniband = false, const std::string& driver = "");
    netns::VfInfo& vf(const std::string& pf, unsigned index);

    std::vector<netns::VfInfo> list(const std::string& pf) override;
    void apply(const std::string& pf, const netns::VfChange& change) override;

    // The next apply() of `field` fails with `err` (after `skip` successful ones of that field).
    void fail_field(netns::VfChange::Field field, int err, int skip = 0);
    // apply() number `n` (1-based, counted from now over all fields) fails with `err`.
    void fail_call(int n, int err);
    // The admin MAC shows up only after `reads` further list() calls (asynchronous drivers);
    // -1 = never.
    void mac_lag(int reads) { mac_lag_ = reads; }

    // The PFs and their VFs as JSON ({"<pf>": {"infiniband": bool, "vfs": [VfInfo...]}}, VFs in
    // the attachment state's encoding), and back: the file-backed fake of the test-only plugin
    // binary (support/fake_kernel_file.hpp) keeps the same kernel model across processes this way.
    // Injected failures and the log are not part of it.
    nlohmann::json pfs_json() const;
    void load_pfs_json(const nlohmann::json& pfs);

    std::vector<std::pair<std::string, netns::VfChange>> log;  // accepted changes, in order
    int list_calls = 0;

private:
    Pf& pf_or_throw(const std::string& pf);
    std::map<std::string, Pf> pfs_;
    struct FieldFailure {
        netns::VfChange::Field field;
        int err;
        int skip;
    };
    std::vector<FieldFailure> field_failures_;
    std::optional<std::pair<int, int>> call_failure_;  // (remaining calls, errno)
    int mac_lag_ = 0;
    std::map<std::pair<std::string, unsigned>, std::pair<std::string, int>> pending_mac_;  // shown after n reads
};

}  // namespace rdmanet::test
