// Requests with deadline and retries: see api.hpp.
#include "rdmanet/ipam/kube/api.hpp"

#include <thread>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/size_limit.hpp"

namespace rdmanet::ipam::kube {

namespace {
std::uint64_t seed() {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
           static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}
}  // namespace

KubeApi::KubeApi(KubeConfig config, Deadline deadline, RetryPolicy policy)
    : config_(std::move(config)), deadline_(deadline), policy_(policy), http_(config_), rng_(seed()) {}

void KubeApi::fail(std::string_view action, const HttpResponse& r) const {
    IpamError e = status_error(action, parse_status(r.status, r.body), config_.server, config_.source);
    if (r.status == 401 || r.status == 403) throw AccessDenied(std::move(e.msg), r.status);
    throw e;
}

void KubeApi::backoff(int attempt, std::string_view why) {
    const auto delay = backoff_delay(policy_.conflict, attempt, rng_());
    if (delay >= deadline_.remaining()) {
        throw IpamError(codes::try_again, "Kubernetes datastore: deadline passed after " + std::to_string(attempt + 1) +
                                              " attempts (" + std::string(why) + "); retry later");
    }
    std::this_thread::sleep_for(delay);
}

HttpResponse KubeApi::call(std::string_view method, const std::string& path, const std::string& body,
                           std::string_view content_type, const RequestOptions& options) {
    const std::string action = std::string(method) + " " + path;
    for (int attempt = 0;; ++attempt) {
        const auto left = deadline_.remaining();
        if (left.count() <= 0) {
            throw IpamError(codes::try_again, "Kubernetes datastore: deadline passed before " + action + " at " +
                                                  config_.server + "; retry later");
        }
        std::string last;
        std::optional<std::chrono::milliseconds> retry_after;
        try {
            ++requests_;
            HttpResponse r = http_.send(method, path, body, content_type, left, options);
            if (!retryable_status(r.status)) return r;
            const ApiStatus s = parse_status(r.status, r.body);
            if (object_too_large(s)) return r;  // permanent: the caller reports it
            last = "HTTP " + std::to_string(r.status) + (s.message.empty() ? "" : ": " + s.message);
            retry_after = r.retry_after;
            if (retry_after && *retry_after >= deadline_.remaining()) {
                throw IpamError(codes::try_again, action + " at " + config_.server + ": throttled (" + last +
                                                      ", Retry-After " + std::to_string(retry_after->count() / 1000) +
                                                      " s) past the deadline; retry later");
            }
        } catch (const TransportError& e) {
            if (e.tls_verification) {
                throw IpamError(codes::io_failure, "TLS verification of the Kubernetes API " + config_.server +
                                                       " failed (" + e.what() +
                                                       "): check the certificate authority in " + config_.source);
            }
            if (!e.retryable) {
                throw IpamError(codes::io_failure,
                                action + " at " + config_.server + " (" + config_.source + ") failed: " + e.what());
            }
            last = e.what();
        }
        const std::string where = action + " at " + config_.server + " (" + config_.source + ")";
        if (attempt + 1 >= policy_.max_attempts) {
            throw IpamError(codes::try_again, where + ": still failing after " + std::to_string(attempt + 1) +
                                                  " attempts, last: " + last + "; retry later");
        }
        const auto delay = retry_delay(policy_, attempt, retry_after, rng_());
        if (delay >= deadline_.remaining()) {
            throw IpamError(codes::try_again, where + ": still failing when the deadline passed after " +
                                                  std::to_string(attempt + 1) + " attempts, last: " + last);
        }
        std::this_thread::sleep_for(delay);
    }
}

}  // namespace rdmanet::ipam::kube
