#include "support/fake_vf_control.hpp"

#include <cerrno>

#include "rdmanet/cni/modes/sriov/state.hpp"
#include "rdmanet/netns/error.hpp"

namespace rdmanet::test {

using netns::KernelError;
using netns::VfChange;
using Field = VfChange::Field;

void FakeVfControl::add_pf(const std::string& pf, unsigned num_vfs, bool infiniband, const std::string& driver) {
    Pf p;
    p.infiniband = infiniband;
    p.driver = driver;
    for (unsigned i = 0; i < num_vfs; ++i) {
        netns::VfInfo vf;
        vf.index = i;
        vf.spoofchk = true;
        vf.trust = false;
        if (infiniband) {
            vf.node_guid = 0x0002c90300a0b000ull + i;
            vf.port_guid = 0x0002c90300a0b000ull + i;
        }
        p.vfs.push_back(vf);
    }
    pfs_[pf] = std::move(p);
}

nlohmann::json FakeVfControl::pfs_json() const {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, pf] : pfs_) {
        nlohmann::json vfs = nlohmann::json::array();
        for (const auto& vf : pf.vfs) vfs.push_back(cni::vf_info_to_json(vf));
        out[name] = {{"infiniband", pf.infiniband}, {"vfs", vfs}};
        if (!pf.driver.empty()) out[name]["driver"] = pf.driver;
    }
    return out;
}

void FakeVfControl::load_pfs_json(const nlohmann::json& pfs) {
    pfs_.clear();
    if (!pfs.is_object()) return;
    for (const auto& [name, j] : pfs.items()) {
        Pf pf;
        pf.infiniband = j.value("infiniband", false);
        pf.driver = j.value("driver", "");
        unsigned index = 0;
        for (const auto& vf : j.value("vfs", nlohmann::json::array())) {
            pf.vfs.push_back(cni::vf_info_from_json(vf));
            pf.vfs.back().index = index++;  // a VF's index is its position, as the kernel lists them
        }
        pfs_[name] = std::move(pf);
    }
}

FakeVfControl::Pf& FakeVfControl::pf_or_throw(const std::string& pf) {
    auto it = pfs_.find(pf);
    if (it == pfs_.end()) throw KernelError(ENODEV, "fake: no PF " + pf);
    return it->second;
}

netns::VfInfo& FakeVfControl::vf(const std::string& pf, unsigned index) { return pfs_.at(pf).vfs.at(index); }

std::vector<netns::VfInfo> FakeVfControl::list(const std::string& pf) {
    ++list_calls;
    auto& p = pf_or_throw(pf);
    for (auto it = pending_mac_.begin(); it != pending_mac_.end();) {
        auto& [mac, reads] = it->second;
        if (it->first.first == pf && reads >= 0 && reads-- == 0) {
            p.vfs.at(it->first.second).mac = mac;
            it = pending_mac_.erase(it);
        } else {
            ++it;
        }
    }
    return p.vfs;
}

void FakeVfControl::fail_field(Field field, int err, int skip) { field_failures_.push_back({field, err, skip}); }

void FakeVfControl::fail_call(int n, int err) { call_failure_ = std::make_pair(n, err); }

void FakeVfControl::apply(const std::string& pf_name, const VfChange& c) {
    const std::string what = "fake: set VF " + std::to_string(c.vf) + " " + c.describe() + " on " + pf_name;
    if (call_failure_ && --call_failure_->first == 0) {
        const int err = call_failure_->second;
        call_failure_.reset();
        throw KernelError(err, what + " (injected)");
    }
    for (auto it = field_failures_.begin(); it != field_failures_.end(); ++it) {
        if (it->field != c.field) continue;
        if (it->skip-- > 0) continue;
        const int err = it->err;
        field_failures_.erase(it);
        throw KernelError(err, what + " (injected)");
    }
    Pf& pf = pf_or_throw(pf_name);
    if (c.vf >= pf.vfs.size()) throw KernelError(EINVAL, what + ": no such VF");
    netns::VfInfo& vf = pf.vfs[c.vf];
    switch (c.field) {
    case Field::mac: {
        if (pf.infiniband) throw KernelError(EOPNOTSUPP, what);
        auto first = std::stoi(c.mac.substr(0, 2), nullptr, 16);
        if (first & 1) throw KernelError(EINVAL, what + ": multicast");
        if (mac_lag_ != 0) {
            pending_mac_[{pf_name, c.vf}] = {c.mac, mac_lag_};
        } else {
            vf.mac = c.mac;
        }
        break;
    }
    case Field::vlan:
        if (pf.infiniband) throw KernelError(EOPNOTSUPP, what);
        if (c.vlan > 4095 || c.qos > 7) throw KernelError(EINVAL, what);
        if (pf.driver == "igb" && c.vlan_proto != netns::kVlanProto8021Q) throw KernelError(EPROTONOSUPPORT, what);
        vf.vlan = c.vlan;
        vf.qos = c.qos;
        vf.vlan_proto = c.vlan_proto;
        break;
    case Field::rate:
        if (c.max_tx_rate != 0 && c.min_tx_rate > c.max_tx_rate) throw KernelError(EINVAL, what);
        // igb: only a maximum, at most the link speed (the emulated 82576 links at 1000 Mb/s).
        if (pf.driver == "igb" && (c.min_tx_rate != 0 || c.max_tx_rate > 1000)) throw KernelError(EINVAL, what);
        vf.min_tx_rate = c.min_tx_rate;
        vf.max_tx_rate = c.max_tx_rate;
        break;
    case Field::spoofchk:
        if (!vf.spoofchk) throw KernelError(EOPNOTSUPP, what);
        vf.spoofchk = c.enabled;
        break;
    case Field::trust:
        if (!vf.trust) throw KernelError(EOPNOTSUPP, what);
        vf.trust = c.enabled;
        break;
    case Field::link_state:
        if (static_cast<unsigned>(c.link_state) > 2) throw KernelError(EINVAL, what);
        if (pf.driver == "igb") throw KernelError(EOPNOTSUPP, what);
        vf.link_state = c.link_state;
        break;
    case Field::node_guid:
        if (!pf.infiniband) throw KernelError(EOPNOTSUPP, what);
        vf.node_guid = c.guid;
        break;
    case Field::port_guid:
        if (!pf.infiniband) throw KernelError(EOPNOTSUPP, what);
        vf.port_guid = c.guid;
        break;
    }
    log.emplace_back(pf_name, c);
}

}  // namespace rdmanet::test
