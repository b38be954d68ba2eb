#pragma once
// When to retry a Kubernetes API request and how long to wait first. Pure functions; the clock and
// the random source belong to the caller (KubeApi), so the policy is tested without sleeping.
//
// Retried: 429 Too Many Requests (after its Retry-After when given), 5xx except 501, and
// connection-level failures (refused, reset, dropped, timed out). One request is sent at most
// max_attempts times (client-go's rest client's convention: 10), with a jittered exponential
// backoff between the attempts that grows to seconds, and never past the verb's deadline: an API
// server that fails every request gets a handful of requests per CNI call, not as many as fit
// into its budget.
// 409 Conflict and 422 failed-test patches are not retried here: they mean "re-read and decide
// again", which the store does with the shorter `conflict` backoff (the race is lost to another
// writer that made progress, not to a failing server), bounded by the deadline alone.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rdmanet::ipam::kube {

using std::chrono::milliseconds;

// An exponential backoff: the ceiling of wait number n is min(max, initial * 2^n).
struct Backoff {
    milliseconds initial;
    milliseconds max;
};

struct RetryPolicy {
    // Sends of one request, the first included.
    int max_attempts = 10;
    // Between them: ceilings 100, 200, 400, 800, 1600, 2000, 2000, 2000, 2000 ms (9 waits, at most
    // 11.1 s in all, at least half of that).
    Backoff server{milliseconds(100), milliseconds(2000)};
    // A Retry-After longer than this is shortened to it.
    milliseconds max_retry_after{10000};
    // The store's re-read after a lost race (KubeApi::backoff): 4 ms doubling to 400 ms.
    Backoff conflict{milliseconds(4), milliseconds(400)};
};

bool retryable_status(long http_status);

// Delay before wait number `attempt` (0 = first): "equal jitter", uniform in [ceiling/2, ceiling]
// with ceiling = min(max, initial * 2^attempt), so that callers that collided once spread out
// instead of colliding again in lockstep. `random` is any 64-bit random value.
milliseconds backoff_delay(const Backoff& backoff, int attempt, std::uint64_t random);

// Delay before retry number `attempt` of a request that failed (0 = first retry): the server
// backoff, or the server's Retry-After when that is longer (capped at max_retry_after).
milliseconds retry_delay(const RetryPolicy& policy, int attempt, std::optional<milliseconds> retry_after,
                         std::uint64_t random);

// Retry-After as delta-seconds ("3"); nullopt for anything else (HTTP-date is not used by the
// kube-apiserver's throttling).
std::optional<milliseconds> parse_retry_after(std::string_view value);

}  // namespace rdmanet::ipam::kube
