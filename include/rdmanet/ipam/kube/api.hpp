#pragma once
// The Kubernetes API as the IPAM uses it: one connection (http.hpp), every request bounded by the
// verb's deadline, retried at most RetryPolicy::max_attempts times with jittered backoff on 429
// (honouring Retry-After), 5xx and connection failures (retry.hpp); the final status goes back to the caller, which maps the ones it does not
// handle itself with status.hpp.
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "rdmanet/ipam/kube/http.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"
#include "rdmanet/ipam/kube/retry.hpp"
#include "rdmanet/ipam/kube/status.hpp"

namespace rdmanet::ipam::kube {

struct Deadline {
    std::chrono::steady_clock::time_point at;
    static Deadline in(std::chrono::milliseconds d) { return {std::chrono::steady_clock::now() + d}; }
    std::chrono::milliseconds remaining() const {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at - std::chrono::steady_clock::now());
        return left.count() > 0 ? left : std::chrono::milliseconds(0);
    }
    bool passed() const { return std::chrono::steady_clock::now() >= at; }
};

// Default budgets of one CNI verb (kubelet's runtime gives ADD 4 min; whereabouts uses 2 min /
// 1 min; ours leave room for the rest of the plugin's work).
inline constexpr std::chrono::milliseconds kAddBudget{60000};
inline constexpr std::chrono::milliseconds kDelBudget{30000};

class KubeApi {
public:
    KubeApi(KubeConfig config, Deadline deadline, RetryPolicy policy = {});

    // Sends until the response is not retryable, max_attempts sends were made, or the deadline
    // passes. Returns that response (2xx, 404, 409, 422, ...). Throws IpamError: try_again when the
    // attempts ran out or the deadline passed while retrying (naming the last failure), io_failure for a failure that retrying cannot fix (TLS
    // verification, connection error after the deadline, ...).
    HttpResponse call(std::string_view method, const std::string& path, const std::string& body = {},
                      std::string_view content_type = "application/json", const RequestOptions& options = {});

    // Throws status_error() for `r` (for statuses the caller does not handle).
    [[noreturn]] void fail(std::string_view action, const HttpResponse& r) const;

    // Backoff before the store's own retry (re-read after a conflict). Throws try_again naming
    // `why` when the deadline would pass.
    void backoff(int attempt, std::string_view why);

    const KubeConfig& config() const { return config_; }
    const Deadline& deadline() const { return deadline_; }
    // Moves the deadline (a caller bounding one step, e.g. publication during an outage, below the
    // verb's budget; it restores the old one after).
    void set_deadline(Deadline d) { deadline_ = d; }
    std::uint64_t requests() const { return requests_; }
    long connections() const { return http_.connections(); }

private:
    KubeConfig config_;
    Deadline deadline_;
    RetryPolicy policy_;
    HttpClient http_;
    std::mt19937_64 rng_;
    std::uint64_t requests_ = 0;
};

}  // namespace rdmanet::ipam::kube
