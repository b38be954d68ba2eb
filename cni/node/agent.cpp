// rdmanetctl agent: the node agent's loop (see rdmanet/cni/node/agent.hpp). One thread: a signalfd and the
// metrics socket are polled between passes, so SIGTERM is seen within one poll.
#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/node/kube.hpp"
#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/node/agent_metrics.hpp"
#include "rdmanet/cni/node/agent.hpp"
#include "rdmanet/cni/node/dranet/claim_gc.hpp"

#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/node/metrics_server.hpp"
#include "rdmanet/cni/node/pod_scope.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/access_denied_record.hpp"
#include "rdmanet/ipam/kube/kube_store.hpp"
#include "rdmanet/ipam/kube/slice_store.hpp"
#include "rdmanet/ipam/nvipam/node_block.hpp"
#include "rdmanet/base/fd.hpp"

namespace rdmanet::cni::node {

namespace {

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// SIGTERM, SIGINT (exit) and SIGHUP (run a pass now) as a readable fd, blocked for normal delivery.
base::UniqueFd signal_fd() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
    return base::UniqueFd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
}

class Agent {
public:
    Agent(const AgentOptions& options, std::ostream& out, std::ostream& err) : o_(options), out_(out), err_(err) {}

    void pass() {
        // The node policy as the plugin reads it (RDMANET_POLICY_FILE, else the default file),
        // read again at every pass so the admin's edits apply without a restart.
        const NodePolicy policy = load_node_policy_or_defaults(process_env_lookup(), mode_names());
        metrics_.record_calls(take_call_records(call_metrics_dir(policy.state_dir)));
        const StateStore store(policy);
        RepairReport report = repair_stranded_attachments(store, RepairOptions{false, o_.services});
        if (kube_) {
            try {
                const auto pods = list_node_pods(kube_->api(), o_.node_name);
                const auto gone = pod_tracker_.update(store, pods, std::chrono::steady_clock::now(),
                                                      std::chrono::seconds(o_.pod_grace_seconds));
                merge(report, repair_attachments_of_gone_pods(gone, policy, o_.services));
            } catch (const ipam::AccessDenied& e) {
                ++refused_;
                err_ << "agent: error: listing the pods of node " << o_.node_name << ": " << e.msg << '\n';
            } catch (const ipam::IpamError& e) {
                err_ << "agent: listing the pods of node " << o_.node_name << ": " << e.msg << '\n';
            } catch (const std::exception& e) {
                err_ << "agent: listing the pods of node " << o_.node_name << ": " << e.what() << '\n';
            }
        }
        if (kube_config_) {
            publish_slice_backlog();
            finish_deferred_releases();
            recheck_slices();
            refresh_nv_blocks();
            collect_dranet_claims(policy);
        }
        if (kube_config_ || kube_) {
            metrics_.record_kube_access(
                refused_, ipam::kube::read_access_denied(ipam::kube::slices_dir(o_.ipam_data_dir)).has_value());
            refused_ = 0;
        }
        metrics_.record_pass(report, unix_now());
        if (!report.repaired.empty() || !report.failed.empty() || !report.not_repairable.empty())
            print_repair_report(report, false, out_, err_);
        out_.flush();
        err_.flush();
    }

    std::string metrics_text() {
        // The latest call records too, so a scrape right after a call sees it.
        const NodePolicy policy = load_node_policy_or_defaults(process_env_lookup(), mode_names());
        metrics_.record_calls(take_call_records(call_metrics_dir(policy.state_dir)));
        metrics_.set_attachments(live_attachments_by_mode(StateStore(policy)));
        std::vector<PoolUsage> pools;
        try {
            pools = local_pool_usage(o_.ipam_data_dir);
        } catch (const std::exception& e) {
            spdlog::warn("pool metrics: {}", e.what());
        }
        return metrics_.render(pools);
    }

    void connect_kube() {
        if (!o_.kube.enabled()) return;
        kube_config_ = kube_config(o_.kube);
        kube_ = std::make_unique<ipam::kube::KubeStore>(*kube_config_, ipam::kube::Deadline::in(kCtlBudget), "");
    }

private:
    // DRANET's provider: releases the claims whose ResourceClaim is gone, through the provider
    // (claim_gc.hpp). Nothing happens without its claim records; a skipped round is logged (a
    // refusal of the credentials as an error, counted with the agent's other refusals).
    void collect_dranet_claims(const NodePolicy& policy) {
        node::dranet::ClaimGcOptions gc;
        gc.state_dir = o_.dranet_state_dir.empty()
                           ? std::filesystem::path(policy.state_dir).parent_path().string() + "/dranet"
                           : o_.dranet_state_dir;
        gc.socket_path = o_.dranet_socket;
        const auto r = node::dranet::collect_claims(*kube_config_, gc);
        metrics_.record_claim_gc(r);
        if (!r.ran) return;
        for (const auto& key : r.released)
            out_ << "released DRANET claim " << key.claim_uid << " device " << key.device
                 << ": its ResourceClaim no longer exists\n";
        for (const auto& f : r.failures) err_ << "agent: error: releasing DRANET " << f << " (retried next pass)\n";
        if (r.skipped == node::dranet::GcSkip::credentials) {
            ++refused_;
            err_ << "agent: error: DRANET claim GC skipped, the API server refused the credentials or permissions "
                 << "(fix the kubeconfig or RBAC: resourceclaims get/list in resource.k8s.io): " << r.error << '\n';
        } else if (r.skipped != node::dranet::GcSkip::none) {
            err_ << "agent: DRANET claim GC skipped (" << node::dranet::to_string(r.skipped)
                 << "), nothing released: " << r.error << '\n';
        }
    }

    // Node slices: the plugin commits to the node's local store first and publishes to the slice
    // IPPools after; what an API-server outage held back waits in a backlog. CNI calls publish it
    // too, but a node with no pod churn would keep it until its next call: the agent publishes it
    // every pass, oldest first, within the same budget a CNI call gives it.
    // Node slices: the cluster's reconciler releases the slices of nodes whose Node object is gone.
    // A node that was alive all the same (its Node object deleted and re-created) must stop
    // allocating from them: every pass re-reads the NodeSlicePools of the slices it holds and
    // records the released ones as revoked (one GET per NodeSlicePool; nothing when no slice held).
    void recheck_slices() {
        try {
            for (const auto& r :
                 ipam::kube::recheck_held_slices(*kube_config_, o_.ipam_data_dir, ipam::kube::kPublishBudget))
                err_ << "agent: node slice " << r << " is no longer this node's (released): not allocated from again\n";
        } catch (const ipam::AccessDenied& e) {
            ++refused_;
            err_ << "agent: error: re-checking node slices: " << e.msg << '\n';
        } catch (const ipam::IpamError& e) {
            err_ << "agent: re-checking node slices: " << e.msg << '\n';
        } catch (const std::exception& e) {
            err_ << "agent: re-checking node slices: " << e.what() << '\n';
        }
    }

    // nv-ipam pools: the plugin serves ADDs from the node's cached block without an API request;
    // the agent re-reads each cached pool every pass (one GET each), so a changed pool or a block
    // the controller moved reaches the node within one interval.
    void refresh_nv_blocks() {
        try {
            for (const auto& line :
                 ipam::nvipam::refresh_node_blocks(*kube_config_, o_.ipam_data_dir, ipam::kube::kPublishBudget))
                err_ << "agent: nv-ipam " << line << '\n';
        } catch (const std::exception& e) {
            err_ << "agent: re-reading nv-ipam pools: " << e.what() << '\n';
        }
    }

    // Single-pool mode: releases a DEL could not have the API server take (no answer in its
    // budget, a refusal) wait in the node's backlog; every pass finishes them, oldest first.
    void finish_deferred_releases() {
        try {
            const auto r =
                ipam::kube::finish_deferred_releases(*kube_config_, o_.ipam_data_dir, ipam::kube::kPublishBudget);
            metrics_.record_deferred_releases(r.published, r.remaining);
            if (r.published > 0) out_ << "finished " << r.published << " release(s) DEL had deferred\n";
            if (r.access_denied) ++refused_;
            if (!r.error.empty())
                err_ << "agent: error: " << r.remaining
                     << " release(s) deferred by DEL still wait for the API server: " << r.error << '\n';
        } catch (const std::exception& e) {
            err_ << "agent: finishing deferred releases: " << e.what() << '\n';
        }
    }

    void publish_slice_backlog() {
        try {
            const auto r = ipam::kube::publish_pending(*kube_config_, o_.ipam_data_dir, ipam::kube::kPublishBudget);
            metrics_.record_slice_publish(r.published, r.remaining, r.conflicts.size());
            if (r.access_denied) {
                ++refused_;
                err_ << "agent: error: " << r.remaining << " node-slice change(s) not published, the API server "
                     << "refused the credentials: " << r.error << '\n';
                return;
            }
            if (r.published > 0) out_ << "published " << r.published << " node-slice change(s)\n";
            for (const auto& c : r.conflicts) err_ << "agent: node-slice change not published: " << c << '\n';
            if (!r.error.empty())
                err_ << "agent: " << r.remaining << " node-slice change(s) wait for the API server: " << r.error
                     << '\n';
        } catch (const ipam::IpamError& e) {
            err_ << "agent: publishing node-slice changes: " << e.msg << '\n';
        } catch (const std::exception& e) {
            err_ << "agent: publishing node-slice changes: " << e.what() << '\n';
        }
    }

    static void merge(RepairReport& into, RepairReport&& more) {
        for (auto& i : more.repaired) into.repaired.push_back(std::move(i));
        for (auto& i : more.failed) into.failed.push_back(std::move(i));
        for (auto& i : more.not_repairable) into.not_repairable.push_back(std::move(i));
        for (const auto& i : more.repaired)
            if (into.alive_by_mode[i.mode] > 0) --into.alive_by_mode[i.mode];
    }

    const AgentOptions& o_;
    std::ostream& out_;
    std::ostream& err_;
    AgentMetrics metrics_;
    std::optional<ipam::kube::KubeConfig> kube_config_;
    std::unique_ptr<ipam::kube::KubeStore> kube_;
    GonePodTracker pod_tracker_;
    int refused_ = 0;  // API requests of this pass refused with 401/403
};

}  // namespace

int run_agent(const AgentOptions& options, std::ostream& out, std::ostream& err) {
    if (options.kube.enabled() && options.node_name.empty()) {
        err << "rdmanetctl agent: --kubeconfig/--in-cluster needs --node-name (the DaemonSet passes $NODE_NAME)\n";
        return 2;
    }
    const auto signals = signal_fd();
    Agent agent(options, out, err);
    std::optional<MetricsServer> server;
    try {
        agent.connect_kube();
        if (!options.metrics_address.empty()) {
            server.emplace(options.metrics_address);
            const auto colon = options.metrics_address.rfind(':');
            out << "metrics on " << options.metrics_address.substr(0, colon) << ":" << server->port() << std::endl;
        }
    } catch (const ipam::IpamError& e) {
        err << "rdmanetctl agent: " << e.msg << '\n';
        return 1;
    } catch (const std::exception& e) {
        err << "rdmanetctl agent: " << e.what() << '\n';
        return 1;
    }
    out << "agent: node " << (options.node_name.empty() ? "(local only)" : options.node_name) << ", state "
        << load_node_policy_or_defaults(process_env_lookup(), mode_names()).state_dir << ", every "
        << options.interval_seconds << " s" << std::endl;

    using clock = std::chrono::steady_clock;
    int passes = 0;
    auto next_pass = clock::now();
    for (;;) {
        const auto now = clock::now();
        if (now >= next_pass) {
            try {
                agent.pass();
            } catch (const std::exception& e) {
                err << "agent: pass failed: " << e.what() << std::endl;
            }
            ++passes;
            next_pass = clock::now() + std::chrono::seconds(options.interval_seconds);
            if (options.max_passes > 0 && passes >= options.max_passes) {
                if (!server) return 0;
                next_pass = clock::now() + std::chrono::hours(24 * 365);  // serve metrics until signalled
            }
            continue;
        }
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_pass - now).count();
        pollfd fds[2] = {{signals.get(), POLLIN, 0}, {server ? server->fd() : -1, POLLIN, 0}};
        const int ready = ::poll(fds, 2, static_cast<int>(std::min<long long>(wait, 1000)));
        if (ready < 0) continue;  // EINTR
        if (fds[0].revents & POLLIN) {
            signalfd_siginfo info{};
            [[maybe_unused]] auto n = ::read(signals.get(), &info, sizeof info);
            if (info.ssi_signo == SIGHUP) {
                next_pass = clock::now();
                continue;
            }
            out << "agent: signal " << info.ssi_signo << ", exiting" << std::endl;
            return 0;
        }
        if (server && (fds[1].revents & POLLIN)) server->serve_one([&] { return agent.metrics_text(); });
    }
}

}  // namespace rdmanet::cni::node
