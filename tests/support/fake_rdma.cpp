#include "fake_rdma.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "rdmanet/netns/error.hpp"

namespace rdmanet::test {

using netns::KernelError;
using netns::RdmaNetnsMode;

ino_t netns_id_of_fd(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw KernelError(EBADF, "fake RDMA: fd " + std::to_string(fd));
    return st.st_ino;
}

FakeRdmaKernel::FakeRdmaKernel() : init_(netns_id_of_fd(netns::NetNamespace::current().fd())) {}

std::uint32_t FakeRdmaKernel::add_device(const std::string& name, bool can_disassociate) {
    const auto index = static_cast<std::uint32_t>(devices_.size() + 1);
    devices_.push_back({index, name, can_disassociate, init_, ""});
    return index;
}

void FakeRdmaKernel::bind_to_netdev(const std::string& device, const std::string& netdev) {
    for (auto& d : devices_)
        if (d.name == device) d.bound_netdev = netdev;
}

bool FakeRdmaKernel::exists(const std::string& name) const {
    return std::any_of(devices_.begin(), devices_.end(), [&](const Device& d) { return d.name == name; });
}

void FakeRdmaKernel::run_netdev_notifier() {
    if (!netdev_in_init) return;
    for (auto it = devices_.begin(); it != devices_.end();) {
        if (it->bound_netdev.empty() || netdev_in_init(it->bound_netdev)) {
            ++it;
            continue;
        }
        const std::string name = it->name;
        it = devices_.erase(it);
        if (on_deleted) on_deleted(name);
    }
}

void FakeRdmaKernel::netns_destroyed(ino_t id) {
    others_.erase(std::remove(others_.begin(), others_.end(), id), others_.end());
    for (auto& d : devices_)
        if (d.owner == id) {
            d.owner = init_;  // the kernel returns a dying namespace's devices to init_net
            if (on_host_visibility) on_host_visibility(d.name, true);
        }
}

nlohmann::json FakeRdmaKernel::to_json() const {
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& d : devices_) {
        nlohmann::json device = {{"index", d.index},
                                 {"name", d.name},
                                 {"canDisassociate", d.can_disassociate},
                                 {"owner", d.owner == init_ ? 0 : d.owner}};
        if (!d.bound_netdev.empty()) device["boundNetdev"] = d.bound_netdev;
        devices.push_back(device);
    }
    return {{"mode", std::string(netns::rdma_netns_mode_name(mode_))}, {"devices", devices}};
}

void FakeRdmaKernel::load_json(const nlohmann::json& j) {
    devices_.clear();
    if (!j.is_object()) return;
    mode_ = netns::parse_rdma_netns_mode(j.value("mode", "shared")).value_or(RdmaNetnsMode::shared);
    for (const auto& d : j.value("devices", nlohmann::json::array())) {
        const auto owner = d.value("owner", static_cast<ino_t>(0));
        devices_.push_back({d.value("index", static_cast<std::uint32_t>(devices_.size() + 1)), d.value("name", ""),
                            d.value("canDisassociate", true), owner == 0 ? init_ : owner, d.value("boundNetdev", "")});
    }
}

void FakeRdmaKernel::reap_dead_namespaces(const std::vector<ino_t>& live) {
    std::vector<ino_t> dead;
    for (const auto& d : devices_)
        if (d.owner != init_ && std::find(live.begin(), live.end(), d.owner) == live.end()) dead.push_back(d.owner);
    for (ino_t id : dead) netns_destroyed(id);
}

ino_t FakeRdmaKernel::owner_of(const std::string& name) const {
    for (const auto& d : devices_)
        if (d.name == name) return d.owner;
    return 0;
}

bool FakeRdmaKernel::visible_in(const std::string& name, ino_t id) const {
    for (const auto& d : devices_)
        if (d.name == name) return mode_ == RdmaNetnsMode::shared || d.owner == id;
    return false;
}

class FakeRdmaView final : public netns::RdmaNetlink {
public:
    FakeRdmaView(FakeRdmaKernel& k, ino_t ns) : k_(k), ns_(ns) {}

    RdmaNetnsMode netns_mode() override {
        k_.run_netdev_notifier();
        k_.calls_.push_back("sys_get");
        return k_.mode_;
    }

    void set_netns_mode(RdmaNetnsMode mode) override {
        k_.calls_.push_back("sys_set " + std::string(netns::rdma_netns_mode_name(mode)));
        if (mode == k_.mode_) return;
        if (!k_.others_.empty()) throw KernelError(EBUSY, "set the RDMA netns mode (fake)");
        k_.mode_ = mode;
    }

    std::vector<netns::RdmaDeviceInfo> devices() override {
        k_.run_netdev_notifier();
        k_.calls_.push_back("get");
        std::vector<netns::RdmaDeviceInfo> out;
        for (const auto& d : k_.devices_)
            if (visible(d)) out.push_back({d.index, d.name});
        return out;
    }

    void move_device(std::uint32_t index, int netns_fd) override {
        k_.run_netdev_notifier();
        auto it = std::find_if(k_.devices_.begin(), k_.devices_.end(),
                               [&](const auto& d) { return d.index == index && visible(d); });
        k_.calls_.push_back("move " + (it == k_.devices_.end() ? "#" + std::to_string(index) : it->name));
        if (it == k_.devices_.end()) throw KernelError(EINVAL, "move RDMA device (fake): no such index");
        const ino_t target = netns_id_of_fd(netns_fd);
        if (k_.mode_ == RdmaNetnsMode::shared || !it->can_disassociate)
            throw KernelError(EOPNOTSUPP, "move RDMA device " + it->name + " (fake)");
        const bool was_home = it->owner == k_.init_;
        it->owner = target;
        const bool is_home = target == k_.init_;
        if (was_home != is_home && k_.on_host_visibility) k_.on_host_visibility(it->name, is_home);
    }

    void rename_device(std::uint32_t index, const std::string& name) override {
        auto it = std::find_if(k_.devices_.begin(), k_.devices_.end(),
                               [&](const auto& d) { return d.index == index && visible(d); });
        k_.calls_.push_back("rename " + (it == k_.devices_.end() ? "#" + std::to_string(index) : it->name) + " " +
                            name);
        if (it == k_.devices_.end() || name.empty()) throw KernelError(EINVAL, "rename RDMA device (fake)");
        if (it->name == name) return;
        for (const auto& d : k_.devices_)
            if (d.name == name) throw KernelError(EEXIST, "rename RDMA device " + it->name + " to " + name + " (fake)");
        const std::string from = it->name;
        it->name = name;
        if (k_.on_rename) k_.on_rename(from, name);
    }

private:
    bool visible(const FakeRdmaKernel::Device& d) const { return k_.mode_ == RdmaNetnsMode::shared || d.owner == ns_; }
    FakeRdmaKernel& k_;
    ino_t ns_;
};

std::unique_ptr<netns::RdmaNetlink> FakeRdmaKernel::open_view(ino_t id) {
    return std::make_unique<FakeRdmaView>(*this, id);
}

void StandInIpoibLinks::create(const netns::IpoibSpec& spec) {
    if ((spec.pkey & 0x7fff) == 0) throw KernelError(EINVAL, "create IPoIB child (stand-in): invalid pkey");
    auto parent = rtnl_.link_by_index(spec.parent_index);
    if (!parent) throw KernelError(ENODEV, "create IPoIB child (stand-in): no parent");
    // Several rtnetlink children may share a pkey (one per pod on a partition), unlike the
    // legacy sysfs create_child; so no duplicate check here either.
    netns::MacvlanSpec mv;
    mv.name = spec.name;
    mv.master_index = spec.parent_index;
    mv.mode = netns::MacvlanMode::bridge;
    rtnl_.create_macvlan(mv);
    created_.push_back(spec);
}

}  // namespace rdmanet::test
