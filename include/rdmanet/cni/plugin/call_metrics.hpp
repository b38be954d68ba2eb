#pragma once
// The plugin's share of the node metrics: one fixed-size binary record per CNI call (verb, result
// code, duration), appended with a single O_APPEND write to calls.metrics next to the attachment
// state directory (call_metrics_dir()). That costs
// the plugin an open, a 24-byte write and a close (a few microseconds) and no lock: O_APPEND
// writes of this size are atomic, so concurrent plugins never interleave records. The node agent
// takes the file over (rename, then read), aggregates the records into counters and latency
// histograms, and serves them (agent_metrics.hpp).
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmanet/cni/protocol/env.hpp"

namespace rdmanet::cni {

inline constexpr const char* kCallMetricsFile = "calls.metrics";
inline constexpr std::uint16_t kCallCodeOther = 999;  // failed with something other than a CNI error

struct CallRecord {
    std::uint32_t magic = kMagic;
    std::uint8_t verb = 0;  // Command
    std::uint8_t reserved = 0;
    std::uint16_t code = 0;  // 0 = success, else the CNI error code (kCallCodeOther: unknown)
    std::uint32_t duration_us = 0;
    std::uint32_t reserved2 = 0;
    std::uint64_t unix_ms = 0;
    static constexpr std::uint32_t kMagic = 0x31434e52;  // "RNC1"
};
static_assert(sizeof(CallRecord) == 24, "the record is a fixed 24-byte on-disk format");

// Where calls.metrics lives: the parent of the attachment state directory
// (/var/lib/cni/rdmanet by default), so the state directory holds attachment states only.
std::string call_metrics_dir(const std::string& state_dir);

// Appends one record to <dir>/calls.metrics (created 0600). Best effort and silent: metrics must
// never fail a CNI call. A missing `dir` is not created.
void append_call_record(const std::string& dir, Command verb, int code, std::uint64_t duration_us);

// Pure: the records in `bytes`; a torn or foreign tail is skipped.
std::vector<CallRecord> parse_call_records(std::string_view bytes);

// Takes over <dir>/calls.metrics (and any file a previous taker left) and returns its records.
// Atomic against the plugins: a plugin appends either before the rename (read here) or after
// (to a new file, read next time).
std::vector<CallRecord> take_call_records(const std::string& dir);

// Counters and latency histograms per verb, built from records.
class CallStats {
public:
    // Upper bounds of the duration histogram, in seconds (Prometheus "le").
    static constexpr std::array<double, 12> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                        0.1,   0.25,   0.5,   1.0,  2.5,   10.0};
    struct Histogram {
        std::array<std::uint64_t, kBuckets.size()> buckets{};  // non-cumulative per bucket
        std::uint64_t count = 0;
        double sum_seconds = 0;
    };

    void add(const CallRecord& record);
    // (verb name, code) -> calls
    const std::map<std::pair<std::string, int>, std::uint64_t>& calls() const { return calls_; }
    const std::map<std::string, Histogram>& durations() const { return durations_; }

private:
    std::map<std::pair<std::string, int>, std::uint64_t> calls_;
    std::map<std::string, Histogram> durations_;
};

}  // namespace rdmanet::cni
