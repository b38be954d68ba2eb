#include "e2e/e2e_fakekernel.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "rdmanet/netns/rtnl.hpp"

namespace rdmanet::test::e2e {

namespace fs = std::filesystem;

SriovNode::SriovNode(const Workspace& workspace, const std::string& rdma_mode, const std::string& pf_driver)
    : ws(workspace),
      pf(unique_name("pf")),
      ibpf(unique_name("ibpf")),
      kernel(workspace.path("kernel.json"), tree.root()) {
    FakeSriovNode layout{pf, ibpf, vf0.name_a(), ibvf.name_a()};
    layout.ib_vf_rdma = true;
    layout.pf_driver = pf_driver;
    if (pf_driver == "igb") layout.vf1_netdev = vf1.emplace(nullptr, nullptr, "vg").name_a();
    // The kernel's starting point, built with the in-memory fake (same model, same encoding).
    FakeVfControl vfs;
    layout.build(tree, vfs);
    kernel.write({{"vf", vfs.pfs_json()},
                  {"rdma",
                   {{"mode", rdma_mode},
                    {"devices",
                     {{{"index", 1}, {"name", "mlx5_0"}, {"owner", 0}},
                      {{"index", 2}, {"name", "mlx5_7"}, {"owner", 0}, {"pci", kVfPci}},
                      {{"index", 3}, {"name", "mlx5_9"}, {"owner", 0}, {"pci", kIbVfPci}}}}}}});
}

std::map<std::string, std::string> SriovNode::env() const {
    auto e = ws.env();
    e[kFakeSysfsRootEnv] = tree.root();
    e[kFakeKernelStateEnv] = kernel.path();
    return e;
}

json SriovNode::vf(const std::string& pf_name, unsigned index) const {
    return kernel.read().at("vf").at(pf_name).at("vfs").at(index);
}

std::uint64_t SriovNode::rdma_owner(const std::string& device) const {
    // Looked at through the model, as a look at the kernel would: a namespace that died since the
    // last call has handed its devices back by now.
    kernel.update([](FakeKernelFile::Model&) {});
    const json state = kernel.read();  // not iterated as a temporary: it would dangle
    for (const auto& d : state.at("rdma").at("devices"))
        if (d.value("name", "") == device) return d.value("owner", std::uint64_t{0});
    throw std::runtime_error("no RDMA device " + device + " in the fake kernel");
}

std::vector<std::string> SriovNode::vf_log() const {
    return kernel.read().value("vfLog", json::array()).get<std::vector<std::string>>();
}

void SriovNode::add_soft_rdma_device(const std::string& name, const std::string& netdev) {
    tree.add_soft_rdma_device(name, netdev);
    json state = kernel.read();
    auto& devices = state["rdma"]["devices"];
    std::uint64_t index = 0;
    for (const auto& d : devices) index = std::max(index, d.value("index", std::uint64_t{0}));
    devices.push_back({{"index", index + 1}, {"name", name}, {"owner", 0}, {"canDisassociate", false}});
    kernel.write(state);
}

IpoibNode::IpoibNode(const Workspace& workspace) : ws(workspace), kernel(workspace.path("kernel.json"), sys.root()) {
    sys.add_netdev(parent.name_a(), 32, "0xffff", "connected");
    kernel.write(json::object());
    netns::Rtnl host;
    const auto link = host.link_by_name(parent.name_a());
    if (!link) throw std::runtime_error("veth " + parent.name_a() + " missing");
    host.set_mtu(link->index, 4092);
    host.set_up(link->index, true);
}

std::map<std::string, std::string> IpoibNode::env() const {
    auto e = ws.env();
    e[kFakeSysfsRootEnv] = sys.root();
    e[kFakeKernelStateEnv] = kernel.path();
    return e;
}

json IpoibNode::created() const { return kernel.read().value("ipoib", json::array()); }

std::optional<HostNetdev> host_netdev(const std::string& name) {
    auto link = find_link(nullptr, name);
    if (!link) return std::nullopt;
    return HostNetdev{name, link_mac(*link), link_alias(*link), link->value("mtu", 0u), link_is_up(*link)};
}

std::vector<std::string> attachment_files(const Workspace& ws) {
    std::vector<std::string> files;
    for (const auto& name : ws.state_files())
        if (!name.ends_with(".lock")) files.push_back(name);
    return files;
}

bool vf_record_exists(const Workspace& ws, const std::string& pci) {
    return fs::exists(fs::path(ws.state_dir()) / "sriov/pci" / pci);
}

json fakekernel_plugin(const std::string& mode, const json& ipam, const json& extra) {
    json plugin = {{"type", "rdmanet-fakekernel"}, {"mode", mode}, {"ipam", ipam}};
    plugin.update(extra);
    return plugin;
}

CniOutcome drive(const Workspace& ws, const std::map<std::string, std::string>& env, const FakeKernelCall& call) {
    DriverRequest req;
    req.verb = call.verb;
    req.conflist = call.conflist;
    req.netns = call.netns;
    req.ifname = call.ifname;
    req.container_id = call.container_id;
    req.cache_dir = ws.cache_dir();
    req.cap_args = call.cap_args;
    req.args = call.args;
    req.single_plugin = call.single_plugin;
    req.cni_path = test_bin_dir() + ":" + default_cni_path();
    return run_driver(req, env);
}

void require_verb_ok(const Workspace& ws, const std::map<std::string, std::string>& env, FakeKernelCall& call,
                     const std::string& verb) {
    call.verb = verb;
    const auto outcome = drive(ws, env, call);
    INFO(verb << ": " << outcome.describe());
    REQUIRE(outcome.ok());
}

std::string fakekernel_path() { return test_bin_dir() + "/rdmanet-fakekernel"; }

}  // namespace rdmanet::test::e2e
