#pragma once
// rdmanetctl's RDMA readers and `rdmanetctl rdma mode [exclusive|shared] [--persist]
// [--modprobe-dir DIR]` (the CLI11 wiring is in cni/main/); libibverbs' view of the ports, which
// `rdmanetctl devices` (cni/doctor/devices.hpp) shows. Each command returns the exit status;
// answers on `out`, problems (in an admin's words) on `err`.
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/netns/rdma.hpp"
#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::cni::cli {

// The modprobe file both `rdma mode --persist` and `install --rdma-netns-mode` write: rdmanet's
// own, so an admin's ib_core.conf is never edited, and named to sort after it (modprobe applies
// the files in name order; the last netns_mode= wins).
inline constexpr const char* kModprobeConfName = "rdmanet-ib_core.conf";

// Where modprobe looks besides /etc/modprobe.d, in its order of precedence from low to high.
inline const std::vector<std::string> kSystemModprobeDirs = {"/lib/modprobe.d", "/usr/lib/modprobe.d",
                                                             "/run/modprobe.d"};

struct RdmaModeOptions {
    std::string set;       // "" shows the mode; else exclusive|shared
    bool persist = false;  // also write the ib_core module option
    std::string modprobe_dir = "/etc/modprobe.d";
    // Read (not written) to tell the boot setting, as modprobe and the kernel would.
    std::vector<std::string> system_modprobe_dirs = kSystemModprobeDirs;
    std::string cmdline_file = "/proc/cmdline";
};

// The netns_mode ib_core gets at its next load: the last `options ib_core ... netns_mode=` of
// the *.conf files of `dirs` (lowest precedence first; files taken in name order, a name in a
// later dir hiding the same name in an earlier one), overridden by ib_core.netns_mode= on the
// kernel command line. value "" = nothing sets it (the kernel default, shared).
struct BootNetnsMode {
    std::string value;   // as written: 0/1, N/Y, ...
    std::string source;  // the file that sets it
};
BootNetnsMode boot_netns_mode(const std::vector<std::string>& dirs, const std::string& cmdline_file);
// A netns_mode parameter value as the kernel reads it (bool: 0/N/n/false = exclusive).
std::optional<netns::RdmaNetnsMode> netns_mode_param(std::string_view value);

// Opens RDMA netlink in the current namespace; tests pass a fake.
using RdmaOpener = std::function<std::unique_ptr<netns::RdmaNetlink>()>;

// Show: the mode and what it means, plus the boot setting (boot_netns_mode over the system dirs
// and modprobe_dir). Set: SYS_SET; EBUSY is explained (other network namespaces exist, the kernel
// only switches while none does) with how to proceed. With persist, <modprobe_dir>/
// rdmanet-ib_core.conf gets `options ib_core netns_mode=<0|1>` (other lines kept) before the
// runtime change is tried; a refused runtime change, or no RDMA netlink at all (ib_core not
// loaded yet), then exits 0 with a note that the setting applies when ib_core next loads.
int rdma_mode(const RdmaModeOptions& options, const RdmaOpener& open, std::ostream& out, std::ostream& err);

// The new content of ib_core.conf: `existing` with any netns_mode= option of ib_core removed and
// `options ib_core netns_mode=N` appended. Pure.
std::string ib_core_conf_with_mode(const std::string& existing, netns::RdmaNetnsMode mode);
// The netns_mode= of ib_core in such a file, nullopt when none (the last one wins, as modprobe).
std::optional<netns::RdmaNetnsMode> ib_core_conf_mode(const std::string& content);

// What libibverbs reports (ibv_query_port), by device and port.
struct VerbsPort {
    std::string device;
    unsigned port = 0;
    std::string state;       // ibv_port_state_str: "PORT_ACTIVE" -> "ACTIVE"
    std::string link_layer;  // "Ethernet" | "InfiniBand"
};
// libibverbs' view of this node (cni/cli/verbs.cpp, linked only into rdmanetctl). Empty when
// there are no devices or no verbs support.
std::vector<VerbsPort> query_verbs_ports();

}  // namespace rdmanet::cni::cli
