// rdmanetctl rdma mode: show / set the RDMA netns mode, explain EBUSY, persist the module option.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <ostream>
#include <sstream>

#include "rdmanet/cni/cli/rdma.hpp"

#include "rdmanet/base/atomic_file.hpp"
#include "rdmanet/netns/error.hpp"

namespace rdmanet::cni::cli {

using netns::RdmaNetnsMode;

namespace {

std::string meaning(RdmaNetnsMode mode) {
    return mode == RdmaNetnsMode::shared
               ? "every RDMA device is visible in every network namespace: pods cannot own one\n"
                 "(rdma.isolation \"auto\" leaves devices in the host, \"required\" fails ADD);\n"
                 "this is what the RDMA shared device plugin and macvlan/IPoIB over a shared HCA need.\n"
               : "an RDMA device is visible only in the namespace that owns it: rdmanet moves the\n"
                 "RDMA device of a hostdev/SR-IOV function into its pod (rdma.isolation auto/required);\n"
                 "the RDMA shared device plugin does not work in this mode.\n";
}

std::vector<std::string> split_words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

bool is_ib_core_options(const std::vector<std::string>& words) {
    return words.size() >= 2 && words[0] == "options" && words[1] == "ib_core";
}

std::string read_text_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string mode_value(RdmaNetnsMode mode) { return std::to_string(static_cast<int>(mode)); }

std::string explain(const netns::KernelError& e, const std::string& action) {
    switch (e.errno_value()) {
    case EPROTONOSUPPORT:
        return "this kernel has no RDMA netlink: ib_core is not loaded (no RDMA driver), or the kernel "
               "was built without InfiniBand support";
    case EINVAL:
    case EOPNOTSUPP:
        return "the kernel does not support RDMA network namespaces (needs Linux >= 5.3): " + std::string(e.what());
    case EPERM:
    case EACCES: return "permission denied: " + action + " needs root (CAP_NET_ADMIN)";
    default: return action + " failed: " + e.what();
    }
}

}  // namespace

std::string ib_core_conf_with_mode(const std::string& existing, RdmaNetnsMode mode) {
    std::istringstream in(existing);
    std::string out;
    for (std::string line; std::getline(in, line);) {
        auto words = split_words(line);
        if (is_ib_core_options(words)) {
            std::string kept = "options ib_core";
            bool any = false;
            for (std::size_t i = 2; i < words.size(); ++i) {
                if (words[i].rfind("netns_mode=", 0) == 0) continue;
                kept += " " + words[i];
                any = true;
            }
            if (!any) continue;  // the line only carried netns_mode
            line = kept;
        }
        out += line + "\n";
    }
    out += "# written by rdmanetctl rdma mode --persist (0 = exclusive, 1 = shared)\n";
    out += "options ib_core netns_mode=" + mode_value(mode) + "\n";
    return out;
}

std::optional<RdmaNetnsMode> ib_core_conf_mode(const std::string& content) {
    std::istringstream in(content);
    std::optional<RdmaNetnsMode> mode;
    for (std::string line; std::getline(in, line);) {
        auto words = split_words(line);
        if (!is_ib_core_options(words)) continue;
        for (std::size_t i = 2; i < words.size(); ++i) {
            if (words[i] == "netns_mode=0") mode = RdmaNetnsMode::exclusive;
            if (words[i] == "netns_mode=1") mode = RdmaNetnsMode::shared;
        }
    }
    return mode;
}

std::optional<RdmaNetnsMode> netns_mode_param(std::string_view value) {
    if (value == "0" || value == "N" || value == "n" || value == "false") return RdmaNetnsMode::exclusive;
    if (value == "1" || value == "Y" || value == "y" || value == "true") return RdmaNetnsMode::shared;
    return std::nullopt;
}

BootNetnsMode boot_netns_mode(const std::vector<std::string>& dirs, const std::string& cmdline_file) {
    static const std::regex kOption(R"(^\s*options\s+ib_core\s+.*\bnetns_mode=(\S+))");
    BootNetnsMode result;
    std::map<std::string, std::filesystem::path> files;  // by name: modprobe's order
    for (const auto& dir : dirs)
        for (const auto& name : netns::sorted_entry_names(dir))
            if (std::filesystem::path(name).extension() == ".conf") files[name] = std::filesystem::path(dir) / name;
    for (const auto& [name, path] : files) {
        std::istringstream in(read_text_file(path));
        std::smatch m;
        for (std::string line; std::getline(in, line);)
            if (std::regex_search(line, m, kOption)) result = {m[1].str(), path.string()};
    }
    // ib_core.netns_mode= on the kernel command line applies when ib_core is built in or loaded.
    static const std::regex kCmdline(R"(\bib_core\.netns_mode=(\S+))");
    std::smatch m;
    const std::string cmdline = read_text_file(cmdline_file);
    if (std::regex_search(cmdline, m, kCmdline)) result = {m[1].str(), cmdline_file};
    return result;
}

int rdma_mode(const RdmaModeOptions& options, const RdmaOpener& open, std::ostream& out, std::ostream& err) {
    const std::filesystem::path conf = std::filesystem::path(options.modprobe_dir) / kModprobeConfName;
    std::optional<RdmaNetnsMode> wanted;
    if (!options.set.empty()) {
        wanted = netns::parse_rdma_netns_mode(options.set);
        if (!wanted) {
            err << "unknown mode \"" << options.set << "\": use exclusive or shared\n";
            return 2;
        }
    } else if (options.persist) {
        err << "--persist needs a mode: rdmanetctl rdma mode exclusive --persist\n";
        return 2;
    }

    if (wanted && options.persist) {
        try {
            // Atomic and durable: a half-written modprobe file could break the next boot's module load.
            std::filesystem::create_directories(conf.parent_path());
            base::write_file_atomically(conf.string(), ib_core_conf_with_mode(read_text_file(conf), *wanted), 0644);
        } catch (const std::exception& e) {
            err << "could not persist the mode in " << conf.string() << ": " << e.what() << "\n";
            return 1;
        }
        out << "wrote `options ib_core netns_mode=" << mode_value(*wanted) << "` to " << conf.string()
            << " (takes effect when ib_core is next loaded, i.e. at boot)\n";
    }

    std::unique_ptr<netns::RdmaNetlink> nl;
    RdmaNetnsMode current{};
    try {
        nl = open();
        current = nl->netns_mode();
    } catch (const netns::KernelError& e) {
        err << explain(e, "reading the RDMA netns mode") << "\n";
        if (wanted && options.persist) {
            // Persisting is exactly what a node without ib_core loaded needs: it applies at load.
            err << "the boot setting is written; it applies when ib_core is next loaded\n";
            return 0;
        }
        return 1;
    }

    if (!wanted) {
        out << "RDMA netns mode: " << netns::rdma_netns_mode_name(current) << "\n" << meaning(current);
        auto dirs = options.system_modprobe_dirs;
        dirs.push_back(options.modprobe_dir);
        const BootNetnsMode boot = boot_netns_mode(dirs, options.cmdline_file);
        if (const auto mode = netns_mode_param(boot.value)) {
            out << "boot setting (" << boot.source << "): " << netns::rdma_netns_mode_name(*mode)
                << (*mode != current ? "  -- differs from the running mode until ib_core is reloaded" : "") << "\n";
        } else if (!boot.value.empty()) {
            out << "boot setting (" << boot.source << "): netns_mode=" << boot.value
                << " is not a value ib_core accepts (0 = exclusive, 1 = shared)\n";
        } else {
            out << "boot setting: none in modprobe.d or the kernel command line (the kernel default is shared)\n";
        }
        return 0;
    }

    try {
        nl->set_netns_mode(*wanted);
    } catch (const netns::KernelError& e) {
        if (e.errno_value() != EBUSY) {
            err << explain(e, "setting the RDMA netns mode") << "\n";
            return 1;
        }
        err << "the kernel refused to switch the RDMA netns mode to " << options.set
            << " (EBUSY): other network namespaces exist on this node.\n"
            << "The mode can only change while the initial namespace is the only one, and every pod\n"
            << "(and many system services) has its own, so on a running node set it at boot instead:\n";
        if (options.persist) {
            err << "  done: " << conf.string() << " now sets it; reboot the node (after draining it) to apply.\n";
            return 0;
        }
        err << "  rdmanetctl rdma mode " << options.set << " --persist   (writes " << conf.string() << ")\n"
            << "  then drain and reboot the node (or stop every pod and reload the RDMA drivers).\n";
        return 1;
    }
    out << "RDMA netns mode: " << netns::rdma_netns_mode_name(*wanted)
        << (current == *wanted ? " (unchanged)" : " (was " + std::string(netns::rdma_netns_mode_name(current)) + ")")
        << "\n";
    if (!options.persist) out << "not persisted: the next boot uses the module default unless you add --persist\n";
    return 0;
}

}  // namespace rdmanet::cni::cli
