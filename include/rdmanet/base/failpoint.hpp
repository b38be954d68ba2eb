#pragma once
// Failpoints: named steps of ADD, DEL and CHECK where a TEST build can kill the plugin (SIGKILL, as
// an OOM kill or a node reboot would), so a test can prove that DEL and GC clean up after a crash at
// any of them; or make the step fail with an error, so a test can prove that the verb unwinds
// everything it did and answers with a CNI error. Compiled in only with -DRDMANET_FAILPOINTS=ON
// (the hardening build); in a normal build failpoint() is an empty inline function and the
// environment is never read.
//
// RDMANET_FAILPOINT=<name> acts when execution reaches that step: it kills the process, or, with
// RDMANET_FAILPOINT_ACTION=error, throws InjectedFailure (an ordinary exception, as a failed
// syscall or a refused request would be) from there. Every step is listed in kFailpoints, which the
// failpoint walks (tests/e2e/test_e2e_failpoint_walk*.cpp, test_e2e_error_walk.cpp) iterate, so a
// new step is walked as soon as it is added here. Header-only, so that the IPAM library (which the
// cni library links, not the other way round) can mark its own steps too.
#include <array>
#include <string_view>
#ifdef RDMANET_FAILPOINTS
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>
#endif

namespace rdmanet::base {

enum class Failpoint {
    add_after_ipam,              // address allocated, nothing in the kernel yet
    add_after_pool_write,        // Kubernetes store: pool entry written, reservation not yet
    add_after_slice_claim,       // node slices: slice claimed in the NodeSlicePool and recorded, nothing allocated
    add_after_slice_commit,      // node slices: backlog marker written, allocation committed locally, not published
    add_after_slice_publish,     // node slices: the slice IPPool has the entry, the ADD not finished
    add_after_state_saved,       // hostdev: identity recorded, device still in the host
    add_after_move,              // device/child in the pod under a temporary or final name
    add_after_pod_record,        // pod-side changes (sysctls, table, rules) recorded, not yet made
    add_after_pod_sysctls,       // the interface's sysctls written, no address yet
    add_after_pod_addresses,     // addresses on the interface and DAD done, no route yet
    add_after_pod_routes,        // policyRouting: the table's routes in place, no rule yet
    add_after_configure,         // addresses and routes set in the pod, state not final
    add_before_commit,           // final state written, rollback not yet disarmed
    del_after_reservation_drop,  // Kubernetes store: reservation deleted, pool entry still there
    del_after_ipam,              // address released, interface still in the pod
    del_after_teardown,          // interface returned/deleted, state file still present
    check_after_ipam,            // the IPAM's CHECK passed, the interface not yet looked at
    check_after_mode,            // the mode's CHECK passed, addresses, routes and rules not yet
    count_
};

// A step's name starts with the verb it belongs to ("add_", "del_", "check_"): the walk arms it there.
inline constexpr std::array<std::string_view, static_cast<std::size_t>(Failpoint::count_)> kFailpoints = {
    "add_after_ipam",          "add_after_pool_write",       "add_after_slice_claim", "add_after_slice_commit",
    "add_after_slice_publish", "add_after_state_saved",      "add_after_move",        "add_after_pod_record",
    "add_after_pod_sysctls",   "add_after_pod_addresses",    "add_after_pod_routes",  "add_after_configure",
    "add_before_commit",       "del_after_reservation_drop", "del_after_ipam",        "del_after_teardown",
    "check_after_ipam",        "check_after_mode",
};

constexpr std::string_view failpoint_name(Failpoint fp) { return kFailpoints[static_cast<std::size_t>(fp)]; }
// The enum and the names are two lists: keep them in step.
static_assert(failpoint_name(Failpoint::add_after_ipam) == "add_after_ipam" &&
              failpoint_name(Failpoint::add_after_pool_write) == "add_after_pool_write" &&
              failpoint_name(Failpoint::add_after_slice_claim) == "add_after_slice_claim" &&
              failpoint_name(Failpoint::add_after_slice_commit) == "add_after_slice_commit" &&
              failpoint_name(Failpoint::add_after_slice_publish) == "add_after_slice_publish" &&
              failpoint_name(Failpoint::add_after_state_saved) == "add_after_state_saved" &&
              failpoint_name(Failpoint::add_after_move) == "add_after_move" &&
              failpoint_name(Failpoint::add_after_pod_record) == "add_after_pod_record" &&
              failpoint_name(Failpoint::add_after_pod_sysctls) == "add_after_pod_sysctls" &&
              failpoint_name(Failpoint::add_after_pod_addresses) == "add_after_pod_addresses" &&
              failpoint_name(Failpoint::add_after_pod_routes) == "add_after_pod_routes" &&
              failpoint_name(Failpoint::add_after_configure) == "add_after_configure" &&
              failpoint_name(Failpoint::add_before_commit) == "add_before_commit" &&
              failpoint_name(Failpoint::del_after_reservation_drop) == "del_after_reservation_drop" &&
              failpoint_name(Failpoint::del_after_ipam) == "del_after_ipam" &&
              failpoint_name(Failpoint::del_after_teardown) == "del_after_teardown" &&
              failpoint_name(Failpoint::check_after_ipam) == "check_after_ipam" &&
              failpoint_name(Failpoint::check_after_mode) == "check_after_mode");

#ifdef RDMANET_FAILPOINTS
// What an armed failpoint throws with RDMANET_FAILPOINT_ACTION=error.
class InjectedFailure : public std::runtime_error {
public:
    explicit InjectedFailure(std::string_view step) : std::runtime_error("injected failure at " + std::string(step)) {}
};

// When $RDMANET_FAILPOINT equals failpoint_name(fp): throws InjectedFailure if
// $RDMANET_FAILPOINT_ACTION is "error", else raises SIGKILL.
inline void failpoint(Failpoint fp) {
    const char* wanted = std::getenv("RDMANET_FAILPOINT");
    if (!wanted || failpoint_name(fp) != wanted) return;
    const char* action = std::getenv("RDMANET_FAILPOINT_ACTION");
    if (action && std::string_view(action) == "error") throw InjectedFailure(failpoint_name(fp));
    std::raise(SIGKILL);
}
#else
inline void failpoint(Failpoint) {}
#endif

}  // namespace rdmanet::base
