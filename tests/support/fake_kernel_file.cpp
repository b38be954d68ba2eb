#include "support/fake_kernel_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/rdma_gids.hpp"
#include "rdmanet/base/fd.hpp"

namespace rdmanet::test {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::optional<ino_t> inode_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return st.st_ino;
}

// The namespace an fd link names ("net:[4026532123]" -> 4026532123).
std::optional<ino_t> netns_inode_of_fd_link(const std::string& fd_path) {
    char target[64];
    const ssize_t n = ::readlink(fd_path.c_str(), target, sizeof target - 1);
    if (n <= 5) return std::nullopt;
    const std::string link(target, static_cast<std::size_t>(n));
    if (link.rfind("net:[", 0) != 0 || link.back() != ']') return std::nullopt;
    try {
        return static_cast<ino_t>(std::stoull(link.substr(5, link.size() - 6)));
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// nsfs inodes of every network namespace that exists as far as this process can tell: those of
// processes (/proc/<pid>/ns/net), those a process holds open (/proc/<pid>/fd/*) and those kept
// alive by a bind mount (`ip netns add`, CNI_NETNS paths), found in mountinfo as nsfs mounts.
// Any of these references keeps a namespace, and so the RDMA devices in it, from being freed.
std::vector<ino_t> live_netns_ids() {
    std::vector<ino_t> ids;
    if (DIR* proc = ::opendir("/proc")) {
        while (const dirent* e = ::readdir(proc)) {
            if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
            const std::string pid_dir = std::string("/proc/") + e->d_name;
            if (auto id = inode_of(pid_dir + "/ns/net")) ids.push_back(*id);
            if (DIR* fds = ::opendir((pid_dir + "/fd").c_str())) {
                while (const dirent* f = ::readdir(fds))
                    if (f->d_name[0] != '.')
                        if (auto id = netns_inode_of_fd_link(pid_dir + "/fd/" + f->d_name)) ids.push_back(*id);
                ::closedir(fds);
            }
        }
        ::closedir(proc);
    }
    std::ifstream mounts("/proc/self/mountinfo");
    for (std::string line; std::getline(mounts, line);) {
        // "<id> <parent> <maj:min> <root> <mount point> <options> ... - <fstype> <source> ..."
        const auto dash = line.find(" - ");
        if (dash == std::string::npos || line.compare(dash + 3, 5, "nsfs ") != 0) continue;
        std::istringstream fields(line.substr(0, dash));
        std::string id, parent, dev, root, point;
        fields >> id >> parent >> dev >> root >> point;
        if (auto ino = inode_of(point)) ids.push_back(*ino);
    }
    return ids;
}

// The lock is a separate file so that the state file itself can be replaced by rename.
class FileLockGuard {
public:
    explicit FileLockGuard(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
        if (!fd_) throw netns::KernelError(errno, "fake kernel: open " + path);
        while (::flock(fd_.get(), LOCK_EX) != 0)
            if (errno != EINTR) throw netns::KernelError(errno, "fake kernel: flock " + path);
    }

private:
    base::UniqueFd fd_;
};

}  // namespace

FakeKernelFile::FakeKernelFile(std::string path, std::string sysfs_root)
    : path_(std::move(path)),
      sysfs_root_(std::move(sysfs_root)),
      init_netns_(netns_id_of_fd(netns::NetNamespace::current().fd())) {}

json FakeKernelFile::read() const {
    std::ifstream in(path_);
    if (!in) return json::object();
    std::ostringstream body;
    body << in.rdbuf();
    if (body.str().empty()) return json::object();
    json j = json::parse(body.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw std::runtime_error("fake kernel: " + path_ + " is not a JSON object");
    return j;
}

void FakeKernelFile::write(const json& state) const {
    const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
    const std::string text = state.dump(2);
    {
        base::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
        if (!fd) throw netns::KernelError(errno, "fake kernel: create " + tmp);
        if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
            throw netns::KernelError(errno, "fake kernel: write " + tmp);
    }
    if (::rename(tmp.c_str(), path_.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw netns::KernelError(err, "fake kernel: rename to " + path_);
    }
}

void FakeKernelFile::set_rdma_visible(const std::string& device, const std::string& pci, bool visible) const {
    if (sysfs_root_.empty() || pci.empty()) return;
    std::error_code ec;
    const fs::path root(sysfs_root_);
    const fs::path function = fs::canonical(root / "bus/pci/devices" / pci, ec);
    if (ec) return;
    if (!visible) {
        fs::remove_all(function / "infiniband" / device, ec);
        fs::remove_all(root / "class/infiniband" / device, ec);
        return;
    }
    fs::create_directories(function / "infiniband" / device, ec);
    fs::create_directories(root / "class/infiniband" / device, ec);
    fs::create_directory_symlink(function, root / "class/infiniband" / device / "device", ec);
}

void FakeKernelFile::rename_in_sysfs(const std::string& from, const std::string& to, const std::string& pci,
                                     bool home) const {
    if (sysfs_root_.empty()) return;
    std::error_code ec;
    const fs::path view = fs::path(sysfs_root_) / kRdmaNetnsView / "class/infiniband";
    if (fs::exists(view / from, ec)) fs::rename(view / from, view / to, ec);
    if (home) {
        set_rdma_visible(from, pci, false);
        set_rdma_visible(to, pci, true);
    }
}

void FakeKernelFile::update(const std::function<void(Model&)>& fn) const {
    if (path_.empty())
        throw std::runtime_error(std::string("fake kernel: ") + kFakeKernelStateEnv +
                                 " is not set (rdmanet-fakekernel is a test binary driven by a fake kernel file)");
    FileLockGuard lock(path_ + ".lock");
    json state = read();

    Model model(init_netns_);
    model.vf.load_pfs_json(state.value("vf", json::object()));
    const json rdma_in = state.value("rdma", json::object());
    model.rdma.load_json(rdma_in);
    model.ipoib = state.value("ipoib", json::array());
    // By index: a rename changes the name, never the index.
    std::map<std::uint64_t, std::string> pci_of;
    std::map<std::string, std::uint64_t> index_of;
    for (const auto& d : rdma_in.value("devices", json::array())) {
        index_of[d.value("name", "")] = d.value("index", std::uint64_t{0});
        if (d.contains("pci")) pci_of[d.value("index", std::uint64_t{0})] = d.value("pci", "");
    }
    model.rdma.on_host_visibility = [&](const std::string& device, bool home) {
        set_rdma_visible(device, pci_of[index_of[device]], home);
    };
    model.rdma.on_rename = [&](const std::string& from, const std::string& to) {
        const auto index = index_of[from];
        index_of.erase(from);
        index_of[to] = index;
        rename_in_sysfs(from, to, pci_of[index], model.rdma.owner_of(to) == model.rdma.init_id());
    };
    // A device bound to a netdev (soft-RoCE) is deleted by its driver once that netdev has left
    // the caller's namespace (the plugin's and the test's: the initial one of this fake).
    model.rdma.netdev_in_init = [](const std::string& netdev) { return ::if_nametoindex(netdev.c_str()) != 0; };
    model.rdma.on_deleted = [&](const std::string& device) {
        set_rdma_visible(device, pci_of[index_of[device]], false);
    };
    model.rdma.reap_dead_namespaces(live_netns_ids());

    fn(model);

    state["vf"] = model.vf.pfs_json();
    json& vf_log = state["vfLog"];
    if (!vf_log.is_array()) vf_log = json::array();
    for (const auto& [pf, change] : model.vf.log)
        vf_log.push_back(pf + ": vf " + std::to_string(change.vf) + " " + change.describe());
    json rdma = model.rdma.to_json();
    for (auto& d : rdma["devices"])
        if (auto it = pci_of.find(d.value("index", std::uint64_t{0})); it != pci_of.end()) d["pci"] = it->second;
    state["rdma"] = rdma;
    json& calls = state["rdmaCalls"];
    if (!calls.is_array()) calls = json::array();
    for (const auto& c : model.rdma.calls()) calls.push_back(c);
    state["ipoib"] = model.ipoib;
    write(state);
}

namespace {

class FileVfControl final : public netns::VfControl {
public:
    explicit FileVfControl(const FakeKernelFile& file) : file_(file) {}
    std::vector<netns::VfInfo> list(const std::string& pf) override {
        std::vector<netns::VfInfo> out;
        file_.update([&](FakeKernelFile::Model& m) { out = m.vf.list(pf); });
        return out;
    }
    void apply(const std::string& pf, const netns::VfChange& change) override {
        file_.update([&](FakeKernelFile::Model& m) { m.vf.apply(pf, change); });
    }

private:
    const FakeKernelFile& file_;
};

// One RDMA netlink "socket" opened in the namespace `ns` (its nsfs inode).
class FileRdmaView final : public netns::RdmaNetlink {
public:
    FileRdmaView(const FakeKernelFile& file, ino_t ns) : file_(file), ns_(ns) {}
    netns::RdmaNetnsMode netns_mode() override {
        netns::RdmaNetnsMode mode{};
        file_.update([&](FakeKernelFile::Model& m) { mode = m.rdma.open_view(ns_)->netns_mode(); });
        return mode;
    }
    void set_netns_mode(netns::RdmaNetnsMode mode) override {
        file_.update([&](FakeKernelFile::Model& m) { m.rdma.open_view(ns_)->set_netns_mode(mode); });
    }
    std::vector<netns::RdmaDeviceInfo> devices() override {
        std::vector<netns::RdmaDeviceInfo> out;
        file_.update([&](FakeKernelFile::Model& m) { out = m.rdma.open_view(ns_)->devices(); });
        return out;
    }
    void move_device(std::uint32_t index, int netns_fd) override {
        file_.update([&](FakeKernelFile::Model& m) { m.rdma.open_view(ns_)->move_device(index, netns_fd); });
    }
    void rename_device(std::uint32_t index, const std::string& name) override {
        file_.update([&](FakeKernelFile::Model& m) { m.rdma.open_view(ns_)->rename_device(index, name); });
    }

private:
    const FakeKernelFile& file_;
    ino_t ns_;
};

// The stand-in makes a real macvlan on the parent (the real kernel's part); the file records the
// IPoIB attributes asked for, which the stand-in cannot carry.
class FileIpoibLinks final : public netns::IpoibLinks {
public:
    FileIpoibLinks(const FakeKernelFile& file, netns::Rtnl& host) : file_(file), standin_(host) {}
    void create(const netns::IpoibSpec& spec) override {
        standin_.create(spec);
        file_.update([&](FakeKernelFile::Model& m) {
            m.ipoib.push_back({{"name", spec.name},
                               {"parentIndex", spec.parent_index},
                               {"pkey", spec.pkey},
                               {"mode", std::string(netns::ipoib_mode_name(spec.mode))},
                               {"umcast", spec.umcast}});
        });
    }
    std::string kind() const override { return standin_.kind(); }

private:
    const FakeKernelFile& file_;
    StandInIpoibLinks standin_;
};

}  // namespace

FakeKernelServices::FakeKernelServices(const std::string& path, const std::string& sysfs_root, netns::Rtnl& host)
    : file_(path, sysfs_root),
      vf_(std::make_unique<FileVfControl>(file_)),
      rdma_{[this](const netns::NetNamespace& ns) -> std::unique_ptr<netns::RdmaNetlink> {
                return std::make_unique<FileRdmaView>(file_, netns_id_of_fd(ns.fd()));
            },
            [this](const netns::NetNamespace& ns, const std::string& device) {
                // What a sysfs mounted in `ns` shows: the device only while `ns` sees it.
                bool visible = false;
                const ino_t id = netns_id_of_fd(ns.fd());
                file_.update([&](FakeKernelFile::Model& m) { visible = m.rdma.visible_in(device, id); });
                if (!visible || file_.sysfs_root().empty()) return netns::RdmaGidTable{};
                return netns::read_gid_table(netns::Sysfs((fs::path(file_.sysfs_root()) / kRdmaNetnsView).string()),
                                             device);
            }},
      ipoib_(std::make_unique<FileIpoibLinks>(file_, host)) {}

FakeKernelServices::~FakeKernelServices() = default;

cni::KernelServices FakeKernelServices::services() {
    cni::KernelServices s;
    s.vf = vf_.get();
    s.rdma = &rdma_;
    s.ipoib = ipoib_.get();
    return s;
}

}  // namespace rdmanet::test
