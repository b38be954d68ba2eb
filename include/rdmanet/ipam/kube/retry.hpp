#pragma once
// When to retry a Kubernetes API request and how long to wait first. Pure functions; the clock and
// the random source belong to the caller (KubeApi), so the policy is tested without sleeping.
//
// Retried: 429 Too Many Requests (after its Retry-After when given), 5xx except 501, and
// connection-level failures (refused, reset, dropped, timed out) - all within the verb's deadline.
// 409 Conflict and 422 failed-test patches are not retried here: they mean "re-read and decide
// again", which the store does (with the same backoff).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rdmanet::ipam::kube {

using std::chrono::milliseconds;

struct RetryPolicy {
    milliseconds initial{4};              // first backoff ceiling
    milliseconds max{400};                // ceiling of any one backoff (Retry-After excepted)
    milliseconds max_retry_after{10000};  // a Retry-After longer than this is shortened to it
};

bool retryable_status(long http_status);

// Delay before retry number `attempt` (0 = first retry): "equal jitter", uniform in
// [ceiling/2, ceiling] with ceiling = min(max, initial * 2^attempt), so that callers that collided
// once spread out instead of colliding again in lockstep. `random` is any 64-bit random value.
// A server's Retry-After wins when it is longer (capped at max_retry_after).
milliseconds backoff_delay(const RetryPolicy& policy, int attempt, std::optional<milliseconds> retry_after,
                           std::uint64_t random);

// Retry-After as delta-seconds ("3"); nullopt for anything else (HTTP-date is not used by the
// kube-apiserver's throttling).
std::optional<milliseconds> parse_retry_after(std::string_view value);

}  // namespace rdmanet::ipam::kube
