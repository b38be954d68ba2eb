// rdma.isolation: the pure decision and the three effects backends call (rdma_isolation.hpp).
#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"

#include <cstring>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/rdma_cm_configfs.hpp"
#include "rdmanet/netns/rdma_sysfs.hpp"

namespace rdmanet::cni {

namespace {

using netns::RdmaNetnsMode;

constexpr const char* kExclusiveHint =
    "set the node's RDMA netns mode to exclusive at boot: `options ib_core netns_mode=0` in "
    "/etc/modprobe.d/rdmanet-ib_core.conf (rdmanetctl rdma mode exclusive --persist writes it), then reload "
    "the RDMA drivers or reboot; or set rdma.isolation to \"auto\" or \"off\"";

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

RdmaDecision fail(std::string message, std::string hint) {
    return RdmaDecision{RdmaStep::fail, "", std::move(message), std::move(hint), false};
}
RdmaDecision nothing(std::string why, bool warn = false) {
    return RdmaDecision{RdmaStep::nothing, "", std::move(why), "", warn};
}

RdmaDecision decide_child(const RdmaFacts& f) {
    const bool exclusive = f.mode == RdmaNetnsMode::exclusive;
    const std::string devices = f.devices.empty() ? "no RDMA device" : "RDMA device " + join(f.devices);
    if (f.policy == RdmaIsolation::required)
        return fail("rdma.isolation is \"required\" but the pod gets a child interface of " + f.subject + " (" +
                        devices + "), and a child cannot own its parent's RDMA device",
                    "use mode \"hostdev\" or \"sriov\" with a whole function (VF/SF) for RDMA isolation, "
                    "or set rdma.isolation to \"auto\" or \"off\"");
    if (exclusive && !f.devices.empty())
        return nothing("the node is in exclusive RDMA netns mode: " + join(f.devices) + " of " + f.subject +
                           " stays in the host namespace and the pod will not see it (the parent's RDMA "
                           "device cannot be shared); use shared mode for macvlan/IPoIB over a shared HCA",
                       true);
    return nothing("child interface: RDMA devices stay where they are");
}

// A software device (rxe) bound to the netdev the pod gets: its driver deletes it when that
// netdev leaves the host namespace, so the pod can never own it and the host loses it.
RdmaDecision decide_bound_to_netdev(const RdmaFacts& f) {
    const std::string why = "RDMA device " + f.devices.front() + " of " + f.subject +
                            " is a software device bound to " + f.netdev +
                            " (soft-RoCE/rxe): its driver deletes it when " + f.netdev +
                            " leaves the host namespace, so the pod cannot own it and the host would lose it";
    if (f.policy == RdmaIsolation::required)
        return fail("rdma.isolation is \"required\" but " + why,
                    "give the pod a hardware function (VF/SF) for RDMA isolation, or set rdma.isolation to "
                    "\"auto\" or \"off\" and create the soft-RoCE device inside the pod (rdma link add "
                    "<name> type rxe netdev <pod interface>)");
    return nothing(why + "; moving " + f.netdev + " anyway, the pod gets no RDMA device", true);
}

}  // namespace

RdmaDecision decide_rdma_isolation(const RdmaFacts& f) {
    if (f.policy == RdmaIsolation::off) return nothing("rdma.isolation is off");
    if (f.child) return decide_child(f);
    const bool required = f.policy == RdmaIsolation::required;
    if (f.devices.empty())
        return required ? fail("rdma.isolation is \"required\" but " + f.subject + " has no RDMA device",
                               "check that the RDMA driver is loaded for it (rdmanetctl devices) or set "
                               "rdma.isolation to \"auto\"")
                        : nothing(f.subject + " has no RDMA device");
    if (f.devices.size() > 1) {
        // rdma-cni likewise insists on exactly one: moving several is never what a pod expects.
        const std::string msg = f.subject + " has " + std::to_string(f.devices.size()) + " RDMA devices (" +
                                join(f.devices) + "); rdmanet moves exactly one";
        return required ? fail(msg, "give the pod a function with a single RDMA device")
                        : nothing(msg + ": left in the host", true);
    }
    if (!f.mode)
        return required ? fail(
                              "rdma.isolation is \"required\" but the kernel has no RDMA network "
                              "namespace support (RDMA netlink SYS_GET failed)",
                              "RDMA namespaces need Linux >= 5.3 with ib_core loaded")
                        : nothing("the kernel reports no RDMA netns mode: " + f.devices.front() + " stays in the host",
                                  true);
    if (*f.mode == RdmaNetnsMode::shared && !required && f.bound_to_netdev) return decide_bound_to_netdev(f);
    if (*f.mode == RdmaNetnsMode::shared)
        return required ? fail("rdma.isolation is \"required\" but the node's RDMA netns mode is shared: " +
                                   f.devices.front() + " cannot be moved into the pod",
                               kExclusiveHint)
                        : nothing("RDMA netns mode is shared: " + f.devices.front() +
                                  " stays in the host (visible to every namespace)");
    if (f.bound_to_netdev) return decide_bound_to_netdev(f);
    return RdmaDecision{RdmaStep::move, f.devices.front(), "", "", false};
}

const RdmaAccess& kernel_rdma_access() {
    static const RdmaAccess access{
        [](const netns::NetNamespace& ns) { return netns::in_netns(ns, [] { return netns::open_rdma_netlink(); }); },
        [](const netns::NetNamespace& ns, const std::string& device) {
            netns::RdmaGidTable table;
            netns::with_netns_sysfs(ns, [&](const netns::Sysfs& view) { table = netns::read_gid_table(view, device); });
            return table;
        }};
    return access;
}

namespace {

const RdmaAccess& access_of(const RdmaAccess* a) { return a ? *a : kernel_rdma_access(); }

// The netns mode from the host's view; nullopt when the kernel has no RDMA netlink or netns
// support. Any other failure (EPERM ...) is an error: it does not tell us the mode.
std::optional<RdmaNetnsMode> read_mode(netns::RdmaNetlink* nl) {
    if (!nl) return std::nullopt;
    try {
        return nl->netns_mode();
    } catch (const netns::KernelError& e) {
        const int err = e.errno_value();
        if (err == EINVAL || err == EOPNOTSUPP || err == EPROTONOSUPPORT) return std::nullopt;
        throw;
    }
}

std::unique_ptr<netns::RdmaNetlink> open_or_null(const RdmaAccess& access, const netns::NetNamespace& ns) {
    try {
        return access.open_in(ns);
    } catch (const netns::KernelError& e) {
        if (e.errno_value() == EPROTONOSUPPORT) return nullptr;  // no RDMA netlink at all
        throw;
    }
}

void log_decision(const RdmaDecision& d) {
    if (d.warn)
        spdlog::warn("rdma isolation: {}", d.message);
    else
        spdlog::info("rdma isolation: {}", d.message);
}

std::string move_failure_hint(int err) {
    if (err == EOPNOTSUPP)
        return "the RDMA driver cannot disassociate open verbs contexts (soft-RoCE/rxe cannot; mlx5 "
               "VFs/SFs can), or the node's RDMA netns mode is shared";
    if (err == EPERM) return "the plugin needs CAP_NET_ADMIN over the pod's network namespace";
    return "";
}

// Moving the device reset its rdma_cm defaults to 0: set the TOS the network asks
// for, from the host (rdma_cm's configfs finds the device by name in any namespace). A failure
// fails ADD: RoCE traffic in the wrong class breaks a lossless fabric quietly.
void apply_roce_tos(const AddRequest& req, const std::string& device, unsigned char tos) {
    static const netns::RdmaCmConfigfs node_configfs;
    const auto& configfs = req.kernel.services.rdma_cm ? *req.kernel.services.rdma_cm : node_configfs;
    const std::string what = "rdma.tos " + std::to_string(tos) + " for RDMA device " + device;
    if (!configfs.available())
        throw Error(ErrorCode::kernel_failure, what + " cannot be set: " + configfs.root() + "/rdma_cm does not exist",
                    "load the rdma_cm module and mount configfs on the node (mount -t configfs none "
                    "/sys/kernel/config), or remove rdma.tos");
    unsigned ports = 0;
    try {
        ports = configfs.set_default_roce_tos(device, tos);
    } catch (const netns::KernelError& e) {
        throw Error(ErrorCode::kernel_failure, what + " could not be set: " + e.what());
    }
    if (ports == 0) throw Error(ErrorCode::kernel_failure, what + " could not be set: rdma_cm lists no port of it");
    spdlog::info("rdma isolation: default_roce_tos {} set on {} port(s) of {}", static_cast<unsigned>(tos), ports,
                 device);
}

void log_name_not_applied(const RdmaConf& conf, const std::string& why) {
    if (!conf.device_name.empty()) spdlog::warn("rdma.deviceName {} not applied: {}", conf.device_name, why);
}

// rdma.deviceName: the device, already in the pod, gets its pod name from a socket inside the
// pod. Recorded before the rename so that DEL (or a crash right after) looks for either name.
void rename_in_pod(const AddRequest& req, const RdmaAccess& access, netns::RdmaNetlink& pod_nl,
                   const netns::RdmaDeviceInfo& device) {
    const std::string& wanted = req.conf.rdma.device_name;
    if (wanted.empty() || wanted == device.name) return;
    req.state.rdma_device_pod_name = wanted;
    req.save_state();
    const netns::NetNamespace& pod_ns = *req.kernel.pod_ns;
    const std::string original = device.name;
    req.rollback.push("rename RDMA device " + wanted + " back to " + original, [&access, &pod_ns, wanted, original] {
        auto in_pod = access.open_in(pod_ns);
        if (auto dev = in_pod->device_by_name(wanted)) in_pod->rename_device(dev->index, original);
    });
    try {
        pod_nl.rename_device(device.index, wanted);
    } catch (const netns::KernelError& e) {
        if (e.errno_value() == EEXIST)
            throw Error(ErrorCode::invalid_config,
                        "rdma.deviceName \"" + wanted + "\" is already the name of another RDMA device of this node",
                        "RDMA device names are unique node-wide on this kernel, whatever namespace holds the "
                        "device: give each rail of a pod its own name, and pods sharing a node different names");
        throw Error(ErrorCode::kernel_failure, "could not rename RDMA device " + original + " to " + wanted +
                                                   " in the pod: " + std::strerror(e.errno_value()));
    }
    spdlog::info("rdma isolation: renamed RDMA device {} to {} in the pod", original, wanted);
}

// DEL: the device's host name back before it goes home. A name now taken in the host view (a
// new device got it meanwhile) leaves the pod's name: logged, the device still goes home.
void restore_name(netns::RdmaNetlink& nl, const netns::RdmaDeviceInfo& device, const std::string& original,
                  const char* where) {
    if (device.name == original) return;
    try {
        nl.rename_device(device.index, original);
        spdlog::info("rdma isolation: renamed RDMA device {} back to {} ({})", device.name, original, where);
    } catch (const netns::KernelError& e) {
        if (e.errno_value() != EEXIST) throw;
        spdlog::warn("rdma isolation: cannot rename RDMA device {} back to {}: the name is taken; left as {}",
                     device.name, original, device.name);
    }
}

void log_tos_not_applied(const RdmaConf& conf, const std::string& why) {
    if (conf.tos)
        spdlog::warn("rdma.tos {} not applied: {} (the node's setting stays)", static_cast<unsigned>(*conf.tos), why);
}

// The pod will not own an RDMA device: the settings that need one are not applied (logged).
void log_not_owned(const RdmaConf& conf, const std::string& why) {
    log_tos_not_applied(conf, why);
    log_name_not_applied(conf, why);
}

// What sysfs says about the function's RDMA devices, before any netlink socket is opened: its
// devices (by PCI function, auxiliary device, else netdev), what to call it in messages, and
// whether a software device is bound to the netdev (the netdev's move would delete it).
RdmaFacts rdma_facts_of(const netns::Sysfs& sysfs, const RdmaFunction& function, RdmaIsolation policy) {
    RdmaFacts facts;
    facts.policy = policy;
    if (!function.function_id.empty()) {
        facts.devices = netns::pci_rdma_devices(sysfs, function.function_id);
        if (facts.devices.empty()) facts.devices = netns::aux_rdma_devices(sysfs, function.function_id);
        facts.subject = "device " + function.function_id;
    }
    if (facts.devices.empty() && !function.netdev.empty()) {
        facts.devices = netns::netdev_rdma_devices(sysfs, function.netdev);
        if (function.function_id.empty()) facts.subject = "interface " + function.netdev;
    }
    if (facts.devices.size() == 1 && !function.netdev.empty() &&
        netns::rdma_device_bound_to_netdev(sysfs, facts.devices.front())) {
        facts.bound_to_netdev = true;
        facts.netdev = function.netdev;
    }
    return facts;
}

// Moves the RDMA device `device` (host name `name`) from the host into the pod. Recorded in the state before the
// move, so that DEL (or a crash between here and the end of ADD) knows where to look, and its
// undo pushed. False when the move failed and the policy lets the pod go without the device
// (logged, the record cleared); throws when it is required.
bool move_rdma_device_into_pod(const AddRequest& req, const RdmaAccess& access, netns::RdmaNetlink& host_nl,
                               const std::string& name, const netns::RdmaDeviceInfo& device) {
    req.state.rdma_device = name;
    req.save_state();
    const netns::NetNamespace& pod_ns = *req.kernel.pod_ns;
    const netns::NetNamespace& host_ns = req.kernel.host_ns;
    req.rollback.push("move RDMA device " + name + " back to the host", [&access, &pod_ns, &host_ns, name] {
        auto in_pod = access.open_in(pod_ns);
        if (auto dev = in_pod->device_by_name(name)) in_pod->move_device(dev->index, host_ns.fd());
    });
    try {
        host_nl.move_device(device.index, pod_ns.fd());
    } catch (const netns::KernelError& e) {
        const std::string msg =
            "could not move RDMA device " + name + " into the pod: " + std::strerror(e.errno_value());
        if (req.conf.rdma.isolation == RdmaIsolation::required)
            throw Error(ErrorCode::kernel_failure, msg, move_failure_hint(e.errno_value()));
        spdlog::warn("rdma isolation: {} ({}); the pod gets the netdev without its RDMA device", msg,
                     move_failure_hint(e.errno_value()));
        req.state.rdma_device.clear();
        req.save_state();
        log_not_owned(req.conf.rdma, "the pod does not own the RDMA device");
        return false;
    }
    return true;
}

}  // namespace

void rdma_isolation_add(const AddRequest& req, const RdmaFunction& function) {
    const RdmaIsolation policy = req.conf.rdma.isolation;
    if (policy == RdmaIsolation::off) {
        log_tos_not_applied(req.conf.rdma, "rdma.isolation is off");
        return;
    }
    RdmaFacts facts = rdma_facts_of(req.kernel.sysfs, function, policy);
    if (facts.devices.empty() && policy == RdmaIsolation::auto_) {
        spdlog::debug("rdma isolation: {} has no RDMA device", facts.subject);
        log_not_owned(req.conf.rdma, facts.subject + " has no RDMA device");
        return;  // nothing to isolate: do not even open RDMA netlink
    }

    const auto& access = access_of(req.kernel.services.rdma);
    auto host_nl = open_or_null(access, req.kernel.host_ns);
    facts.mode = read_mode(host_nl.get());
    const RdmaDecision decision = decide_rdma_isolation(facts);
    if (decision.step == RdmaStep::fail) throw Error(ErrorCode::invalid_config, decision.message, decision.hint);
    if (decision.step == RdmaStep::nothing) {
        log_decision(decision);
        log_not_owned(req.conf.rdma, "the pod does not own the RDMA device");
        return;
    }

    const std::string name = decision.device;
    auto device = host_nl->device_by_name(name);
    if (!device) {
        const std::string msg = "RDMA device " + name + " of " + facts.subject +
                                " is not visible through RDMA netlink in the host namespace";
        if (policy == RdmaIsolation::required)
            throw Error(ErrorCode::device_busy, msg, "it may already belong to another pod");
        spdlog::warn("rdma isolation: {}: not moved", msg);
        log_not_owned(req.conf.rdma, "the pod does not own the RDMA device");
        return;
    }
    if (!move_rdma_device_into_pod(req, access, *host_nl, name, *device)) return;

    // `required` means the pod ends up owning it: check from the pod's side.
    auto pod_nl = access.open_in(*req.kernel.pod_ns);
    const auto in_pod = pod_nl->device_by_name(name);
    if (!in_pod) {
        const std::string msg = "RDMA device " + name + " is not visible in the pod after the move";
        if (policy == RdmaIsolation::required) throw Error(ErrorCode::kernel_failure, msg);
        spdlog::warn("rdma isolation: {}", msg);
        log_not_owned(req.conf.rdma, msg);
        return;
    }
    spdlog::info("rdma isolation: moved RDMA device {} into {}", name, req.env.netns);
    rename_in_pod(req, access, *pod_nl, *in_pod);
    if (req.conf.rdma.tos) apply_roce_tos(req, req.state.rdma_device_in_pod(), *req.conf.rdma.tos);
}

void rdma_device_name_precheck(const NetConf& conf, const netns::NetNamespace& pod_ns, const RdmaAccess* rdma) {
    const std::string& wanted = conf.rdma.device_name;
    if (wanted.empty() || conf.rdma.isolation == RdmaIsolation::off) return;
    auto pod_nl = open_or_null(access_of(rdma), pod_ns);
    if (!pod_nl) return;  // no RDMA netlink: nothing will be moved or renamed
    std::vector<netns::RdmaDeviceInfo> seen;
    try {
        seen = pod_nl->devices();
    } catch (const netns::KernelError& e) {
        if (e.errno_value() == EINVAL || e.errno_value() == EOPNOTSUPP) return;
        throw;
    }
    for (const auto& device : seen)
        if (device.name == wanted)
            throw Error(ErrorCode::invalid_config,
                        "rdma.deviceName \"" + wanted +
                            "\" is already used by an RDMA device in the pod's network "
                            "namespace",
                        "every RDMA attachment of a pod needs its own rdma.deviceName (e.g. rdma0, rdma1, ...)");
}

void rdma_isolation_verify_owned(const AddRequest& req) {
    const std::string name = req.state.rdma_device;
    if (name.empty()) return;  // nothing was moved: nothing promised
    const auto& access = access_of(req.kernel.services.rdma);
    auto pod_nl = access.open_in(*req.kernel.pod_ns);
    auto host_nl = access.open_in(req.kernel.host_ns);
    // With rdma.deviceName the pod knows the device by its new name; a device that went home or
    // was re-created may carry either name.
    const std::string& pod_name = req.state.rdma_device_in_pod();
    const bool in_pod = pod_nl->device_by_name(pod_name).has_value();
    const bool in_host = host_nl->device_by_name(name).has_value() ||
                         (pod_name != name && host_nl->device_by_name(pod_name).has_value());
    if (in_pod && !in_host) {
        spdlog::debug("rdma isolation: the pod owns RDMA device {} at the end of ADD", name);
        return;
    }
    const std::string what =
        !in_pod && !in_host
            ? "RDMA device " + name +
                  " no longer exists: its driver deleted it after it moved into the pod "
                  "(a software device such as rxe is deleted when its netdev " +
                  req.state.host_ifname + " moves)"
            : "RDMA device " + name + " is " +
                  (in_pod ? "visible in the host as well as in the pod" : "back in the host, not in the pod") +
                  " at the end of ADD (its driver re-created it when " + req.state.host_ifname + " moved)";
    if (req.conf.rdma.isolation == RdmaIsolation::required)
        throw Error(ErrorCode::kernel_failure,
                    "rdma.isolation is \"required\" but the pod does not own its RDMA device: " + what,
                    "give the pod a hardware function (VF/SF) whose RDMA device survives the netdev move, or set "
                    "rdma.isolation to \"auto\"");
    spdlog::warn("rdma isolation: {}; the pod gets the netdev without its RDMA device", what);
    req.state.rdma_device.clear();
    req.state.rdma_device_pod_name.clear();
    req.save_state();
}

void rdma_isolation_check_child(const AddRequest& req, const std::string& parent_netdev) {
    const RdmaIsolation policy = req.conf.rdma.isolation;
    if (!req.conf.rdma.device_name.empty())
        throw Error(ErrorCode::invalid_config,
                    "rdma.deviceName is set, but mode " + req.conf.mode + " gives the pod a child interface of " +
                        parent_netdev + ", and a child never owns its parent's RDMA device",
                    "rdma.deviceName needs a whole function (mode hostdev or sriov) in exclusive RDMA netns mode; "
                    "remove it for this network");
    if (policy == RdmaIsolation::off) return;
    RdmaFacts facts;
    facts.policy = policy;
    facts.child = true;
    facts.subject = "master " + parent_netdev;
    facts.devices = netns::netdev_rdma_devices(req.kernel.sysfs, parent_netdev);
    if (facts.devices.empty() && policy == RdmaIsolation::auto_) return;
    if (!facts.devices.empty()) {
        auto host_nl = open_or_null(access_of(req.kernel.services.rdma), req.kernel.host_ns);
        facts.mode = read_mode(host_nl.get());
    }
    const RdmaDecision decision = decide_rdma_isolation(facts);
    if (decision.step == RdmaStep::fail) throw Error(ErrorCode::invalid_config, decision.message, decision.hint);
    log_decision(decision);
    log_tos_not_applied(req.conf.rdma, "a child interface never owns its parent's RDMA device");
}

void rdma_isolation_del(const DelRequest& req) {
    if (!req.state || req.state->rdma_device.empty()) return;
    const std::string& name = req.state->rdma_device;
    const std::string& pod_name = req.state->rdma_device_pod_name;
    const auto& access = access_of(req.kernel.services.rdma);
    // Under the pod's name when it got one (or the rename was under way), else the host's.
    const auto find = [&](netns::RdmaNetlink& nl) {
        std::optional<netns::RdmaDeviceInfo> device;
        if (!pod_name.empty()) device = nl.device_by_name(pod_name);
        if (!device) device = nl.device_by_name(name);
        return device;
    };
    if (!req.kernel.pod_ns) {
        spdlog::info("rdma isolation: pod netns gone, the kernel returned {} to the host", name);
        if (pod_name.empty()) return;
        // It came home under the pod's name: give it its own back.
        auto host_nl = open_or_null(access, req.kernel.host_ns);
        if (!host_nl || read_mode(host_nl.get()) != RdmaNetnsMode::exclusive) return;
        if (auto device = host_nl->device_by_name(pod_name)) restore_name(*host_nl, *device, name, "in the host");
        return;
    }
    auto pod_nl = open_or_null(access, *req.kernel.pod_ns);
    if (!pod_nl) return;
    // In shared mode every namespace sees every device: visible there does not mean owned.
    if (read_mode(pod_nl.get()) != RdmaNetnsMode::exclusive) return;
    auto device = find(*pod_nl);
    if (!device) {
        spdlog::info("rdma isolation: {} is not in the pod (already returned or never moved)", name);
        return;
    }
    restore_name(*pod_nl, *device, name, "in the pod");
    try {
        pod_nl->move_device(device->index, req.kernel.host_ns.fd());
    } catch (const netns::KernelError& e) {
        // Gone between the lookup and the move (EINVAL for an index this netns no longer sees).
        if (e.errno_value() == EINVAL || e.errno_value() == ENODEV) return;
        throw;
    }
    spdlog::info("rdma isolation: returned RDMA device {} to the host", name);
}

}  // namespace rdmanet::cni
