// Every CNI call is a short-lived bin/rdmanet-ipam process. Over hundreds of sequential ADD+DEL
// processes (the steady state of a node's pod churn) the per-call cost and the store's on-disk
// footprint must stay bounded: nothing may accumulate from one process to the next (a SQLite WAL
// that is never truncated, for instance, is re-read in full by every process that opens it).
#include <sys/resource.h>

#include <algorithm>

#include "test_ipam_plugin_util.hpp"

using namespace ipam_plugin_test;
using ipam_test::TempDir;

namespace {

// CPU (user + system) of all reaped children so far, in microseconds.
double children_cpu_us() {
    rusage ru{};
    ::getrusage(RUSAGE_CHILDREN, &ru);
    auto us = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) * 1e6 + static_cast<double>(tv.tv_usec); };
    return us(ru.ru_utime) + us(ru.ru_stime);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

std::uintmax_t file_size_or_zero(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    return ec ? 0 : size;
}

}  // namespace

TEST_CASE("rdmanet-ipam: 300 sequential ADD+DEL processes, per-call cost and store size stay bounded", "[ipam]") {
    TempDir dir;
    const std::string data = dir.sub("data");
    const json conf = net_conf("growth-net", {{"range", "10.73.0.0/16"}, {"data_dir", data}});
    constexpr int kPairs = 300;
    // SQLite's own default auto-checkpoint is 1000 pages (~4 MiB of WAL); leave room above it.
    constexpr std::uintmax_t kMaxWal = 6u << 20;

    std::vector<double> cpu;  // per ADD+DEL pair, this test's children only (it runs them one at a time)
    std::uintmax_t max_wal = 0;
    for (int i = 0; i < kPairs; ++i) {
        const std::string id = "grow-" + std::to_string(i);
        const double before = children_cpu_us();
        const auto a = add(conf, id);
        const auto d = del(conf, id);
        cpu.push_back(children_cpu_us() - before);
        INFO("pair " << i << ": " << a.describe() << " / " << d.describe());
        REQUIRE(a.ok());
        REQUIRE(d.ok());
        // The pool is empty before every ADD, so every ADD gets the first address.
        REQUIRE(first_ip(a) == "10.73.0.1");
        max_wal = std::max(max_wal, file_size_or_zero(data + "/ipam.db-wal"));
    }
    const double first = median(std::vector<double>(cpu.begin(), cpu.begin() + 50));
    const double last = median(std::vector<double>(cpu.end() - 50, cpu.end()));
    INFO("median CPU per ADD+DEL: first 50 pairs " << first << " us, last 50 pairs " << last << " us; largest WAL "
                                                   << max_wal << " bytes");
    CHECK(max_wal <= kMaxWal);
    CHECK(last <= 2.0 * first);
    CHECK(file_size_or_zero(data + "/ipam.db") <= (4u << 20));
    require_verify_clean(data);
}
