// rdmanetctl dranet-provider: see run.hpp.
#include "rdmanet/cni/node/dranet/run.hpp"

#include <filesystem>

#include <spdlog/sinks/ansicolor_sink.h>
#include <spdlog/spdlog.h>

#include "rdmanet/cni/node/stop_signal.hpp"
#include "rdmanet/base/exit_status.hpp"
#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/node/dranet/provider.hpp"
#include "rdmanet/cni/node/unix_http_server.hpp"
#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::cni::node::dranet {

int run_provider(const RunOptions& options, std::ostream& out, std::ostream& err) {
    return base::exit_status_of(err, "rdmanetctl dranet-provider", [&] {
        // One line per decision on stderr: the DaemonSet's container log.
        spdlog::set_default_logger(std::make_shared<spdlog::logger>(
            "dranet-provider", std::make_shared<spdlog::sinks::ansicolor_stderr_sink_mt>(spdlog::color_mode::never)));
        const auto names = mode_names();
        const NodePolicy policy = load_node_policy(process_env_lookup(), names);
        if (options.profiles_dir.empty() || !std::filesystem::is_directory(options.profiles_dir))
            throw std::runtime_error("--profiles \"" + options.profiles_dir + "\" is not a directory");
        ProviderOptions po{options.profiles_dir, options.state_dir, options.node_name, {}, options.dranet};
        if (options.kube.enabled()) {
            // Checked once now, so that a missing service account or a broken kubeconfig stops
            // the start; then read again for every request (a rotated token, an edited file).
            ipam::kube::KubeConfig checked;
            try {
                checked = node::kube_config(options.kube);
            } catch (const ipam::IpamError& e) {
                throw std::runtime_error(std::string(options.kube.in_cluster ? "" : "--kubeconfig: ") + e.msg);
            }
            out << "rdmanetctl dranet-provider: profiles without a kubeconfig use " << checked.source << '\n';
            po.default_kube = [kube = options.kube] { return node::kube_config(kube); };
        }
        if (po.state_dir.empty())
            po.state_dir = std::filesystem::path(policy.state_dir).parent_path().string() + "/dranet";
        // What the answers hold for this DRANET, and what that DRANET cannot be given.
        for (const auto& line : describe_dranet(options.dranet)) out << "rdmanetctl dranet-provider: " << line << '\n';
        // Profiles whose claims whereabouts' reconciler would release: said now, refused per request.
        for (const auto& line : survey_profiles(options.profiles_dir, policy, options.node_name))
            spdlog::warn("dranet-provider: {}", line);
        // Blocked before the workers start, so that only the wait below sees SIGTERM/SIGINT.
        StopSignal stop;
        ProfileProvider provider(po, policy);
        UnixServerOptions so;
        so.socket_path = options.socket_path;
        so.threads = options.threads;
        UnixHttpServer server(so, [&provider](const HttpRequest& r) { return provider.handle(r); });
        server.start();
        out << "rdmanetctl dranet-provider: serving " << options.socket_path << " (profiles " << options.profiles_dir
            << ", state " << po.state_dir << ")\n";
        out.flush();
        while (!stop.wait(std::chrono::seconds(3600))) {
        }
        server.stop();
        out << "rdmanetctl dranet-provider: stopped\n";
        return 0;
    });
}

}  // namespace rdmanet::cni::node::dranet
