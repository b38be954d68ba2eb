#include "rdmanet/cni/plugin/call_metrics.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmanet/base/fd.hpp"

namespace rdmanet::cni {

namespace {

std::string read_all(int fd) {
    std::string body;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        body.append(buf, static_cast<std::size_t>(n));
    }
    return body;
}

constexpr const char* kTakenSuffix = ".taken";

}  // namespace

std::string call_metrics_dir(const std::string& state_dir) {
    std::string dir = state_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    const auto slash = dir.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : dir.substr(0, slash);
}

void append_call_record(const std::string& dir, Command verb, int code, std::uint64_t duration_us) {
    CallRecord r;
    r.verb = static_cast<std::uint8_t>(verb);
    r.code = code < 0 || code > 0xffff ? kCallCodeOther : static_cast<std::uint16_t>(code);
    r.duration_us = duration_us > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(duration_us);
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    r.unix_ms = static_cast<std::uint64_t>(now.tv_sec) * 1000 + static_cast<std::uint64_t>(now.tv_nsec) / 1000000;
    const std::string path = dir + "/" + kCallMetricsFile;
    const base::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return;
    [[maybe_unused]] const auto n = ::write(fd.get(), &r, sizeof r);
}

std::vector<CallRecord> parse_call_records(std::string_view bytes) {
    std::vector<CallRecord> records;
    for (std::size_t at = 0; at + sizeof(CallRecord) <= bytes.size(); at += sizeof(CallRecord)) {
        CallRecord r;
        std::memcpy(&r, bytes.data() + at, sizeof r);
        if (r.magic != CallRecord::kMagic) break;  // not ours from here on: stop, never misread
        records.push_back(r);
    }
    return records;
}

std::vector<CallRecord> take_call_records(const std::string& dir) {
    const base::UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir_fd) return {};
    const std::string taken = std::string(kCallMetricsFile) + kTakenSuffix;
    // A file left by a taker that died before reading it comes first; then the live one. After the
    // rename, plugins open a new file by name. A plugin that opened the old file just before the
    // rename and writes after it was read loses its record: a window of the plugin's own
    // open-to-write gap (microseconds), accepted for counters.
    std::vector<CallRecord> all;
    for (int round = 0; round < 2; ++round) {
        if (round == 1 && ::renameat(dir_fd.get(), kCallMetricsFile, dir_fd.get(), taken.c_str()) != 0) break;
        const base::UniqueFd fd(::openat(dir_fd.get(), taken.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
        if (!fd) continue;
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        const auto records = parse_call_records(read_all(fd.get()));
        all.insert(all.end(), records.begin(), records.end());
        ::unlinkat(dir_fd.get(), taken.c_str(), 0);
    }
    return all;
}

void CallStats::add(const CallRecord& record) {
    const std::string verb(command_name(static_cast<Command>(record.verb)));
    ++calls_[{verb, record.code}];
    auto& h = durations_[verb];
    const double seconds = record.duration_us / 1e6;
    std::size_t i = 0;
    while (i < kBuckets.size() && seconds > kBuckets[i]) ++i;
    if (i < kBuckets.size()) ++h.buckets[i];
    ++h.count;
    h.sum_seconds += seconds;
}

}  // namespace rdmanet::cni
