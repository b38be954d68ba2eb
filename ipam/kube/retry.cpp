// Retry policy: see retry.hpp.
#include "rdmanet/ipam/kube/retry.hpp"

#include <algorithm>
#include <charconv>

namespace rdmanet::ipam::kube {

bool retryable_status(long s) { return s == 429 || (s >= 500 && s <= 599 && s != 501); }

milliseconds backoff_delay(const Backoff& backoff, int attempt, std::uint64_t random) {
    // initial * 2^attempt without overflow: stop doubling once past the ceiling.
    long long ceiling = std::max<long long>(1, backoff.initial.count());
    for (int i = 0; i < attempt && ceiling < backoff.max.count(); ++i) ceiling *= 2;
    ceiling = std::min<long long>(ceiling, std::max<long long>(1, backoff.max.count()));
    const long long half = ceiling / 2;
    const long long span = ceiling - half + 1;
    return milliseconds{half + static_cast<long long>(random % static_cast<std::uint64_t>(span))};
}

milliseconds retry_delay(const RetryPolicy& policy, int attempt, std::optional<milliseconds> retry_after,
                         std::uint64_t random) {
    milliseconds delay = backoff_delay(policy.server, attempt, random);
    if (retry_after) delay = std::max(delay, std::min(*retry_after, policy.max_retry_after));
    return delay;
}

std::optional<milliseconds> parse_retry_after(std::string_view value) {
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\r' || value.back() == '\n'))
        value.remove_suffix(1);
    if (value.empty() || value.size() > 9) return std::nullopt;
    long long seconds = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec != std::errc() || end != value.data() + value.size() || seconds < 0) return std::nullopt;
    return milliseconds(seconds * 1000);
}

}  // namespace rdmanet::ipam::kube
