// In-process IPAM benchmark: one ADD + DEL (ipam::add/ipam::del on the local SQLite store, overlap
// reservations on, as the plugin runs them) at increasing pool fill. The point is that the cost is
// flat: it must not grow with the number of allocations (target <= 50 us at 60k).
//
//   ipam_bench [--iterations N] [--dir PATH] [--quick] [--scenario I]
//   --quick: the IPv6 scenario with 100k instead of 1M allocations; --scenario: run only row I (0-5),
//   e.g. under perf.
//
// The prefill is bulk-imported (SqliteStore::import_pool, one transaction) as offsets 1..N, which
// is what lowest-first allocation produces; every measured ADD then has to find the first free
// address after the N taken ones.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/ipam.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"

using namespace rdmanet::ipam;
using Clock = std::chrono::steady_clock;

namespace {

struct Scenario {
    std::string name;
    std::string range;
    std::size_t fill;
};

struct Stats {
    double median_us, p90_us, p99_us, cpu_median_us, prefill_s, mean_us;
};

// CPU time of this thread (user + system, so the syscalls count): unlike wall time, it does not
// grow when other processes compete for the CPU.
double thread_cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

Stats run(const Scenario& s, const std::string& base_dir, int iterations) {
    const std::string dir = base_dir + "/" + std::to_string(s.fill) + "-" + std::to_string(s.range.size());
    std::filesystem::remove_all(dir);
    const IpamConfig config = parse_ipam_config({{"type", "rdmanet-ipam"}, {"range", s.range}, {"data_dir", dir}});
    SqliteStore store(dir);

    const auto t0 = Clock::now();
    if (s.fill > 0) {
        PoolDump dump{PoolKey{config.network_name, config.ranges[0].cidr}, {}};
        for (std::size_t i = 1; i <= s.fill; ++i) {
            const std::string id = "prefill-" + std::to_string(i);
            dump.allocations.emplace_hint(dump.allocations.end(), i, Owner{id, "bench/" + id, "net1"});
        }
        store.import_pool(dump, "benchnet");
    }
    const double prefill_s = std::chrono::duration<double>(Clock::now() - t0).count();

    std::vector<double> samples, cpu;
    samples.reserve(static_cast<std::size_t>(iterations));
    cpu.reserve(static_cast<std::size_t>(iterations));
    for (int i = 0; i < iterations + 50; ++i) {  // the first 50 warm the statement cache and pages
        const std::string id = "bench-" + std::to_string(i);
        const IpamRequest req{config, "benchnet", id, "net1", "bench/" + id, {}, {}};
        const double cpu_start = thread_cpu_us();
        const auto start = Clock::now();
        const IpamResult r = add(store, req);
        del(store, req);
        const auto end = Clock::now();
        const double cpu_end = thread_cpu_us();
        if (r.ips.size() != 1) std::abort();
        if (i >= 50) {
            samples.push_back(std::chrono::duration<double, std::micro>(end - start).count());
            cpu.push_back(cpu_end - cpu_start);
        }
    }
    std::filesystem::remove_all(dir);
    double sum = 0;
    for (double v : samples) sum += v;
    return {percentile(samples, 0.5),
            percentile(samples, 0.9),
            percentile(samples, 0.99),
            percentile(cpu, 0.5),
            prefill_s,
            sum / static_cast<double>(samples.size())};
}

}  // namespace

int main(int argc, char** argv) {
    int iterations = 2000;
    bool quick = false;
    int only = -1;
    std::string base = (std::filesystem::temp_directory_path() / "rdmanet-ipam-bench").string();
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--iterations" && i + 1 < argc) {
            iterations = std::max(1, std::atoi(argv[++i]));
        } else if (arg == "--dir" && i + 1 < argc) {
            base = argv[++i];
        } else if (arg == "--quick") {
            quick = true;
        } else if (arg == "--scenario" && i + 1 < argc) {
            only = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: %s [--iterations N] [--dir PATH] [--quick] [--scenario I]\n", argv[0]);
            return 2;
        }
    }
    std::vector<Scenario> scenarios = {
        {"IPv4 /16", "10.0.0.0/16", 0},     {"IPv4 /16", "10.0.0.0/16", 1000},
        {"IPv4 /16", "10.0.0.0/16", 10000}, {"IPv4 /16", "10.0.0.0/16", 60000},
        {"IPv6 /64", "fd00::/64", 0},       {"IPv6 /64", "fd00::/64", quick ? 100000u : 1000000u},
    };
    std::printf("ipam_bench: in-process ADD+DEL (local SQLite store) per operation pair, %d iterations, dir %s\n",
                iterations, base.c_str());
    // mean_us last (report.sh reads the columns before it): the mean includes the WAL checkpoints
    // (every ~1000 WAL frames, with their fdatasyncs) that the median never sees.
    std::printf("%-10s %9s %11s %9s %9s %11s %11s %9s\n", "range", "fill", "median_us", "p90_us", "p99_us",
                "cpu_med_us", "prefill_s", "mean_us");
    for (std::size_t i = 0; i < scenarios.size(); ++i) {
        if (only >= 0 && static_cast<std::size_t>(only) != i) continue;
        const Scenario& s = scenarios[i];
        const Stats st = run(s, base, iterations);
        std::printf("%-10s %9zu %11.1f %9.1f %9.1f %11.1f %11.2f %9.1f\n", s.name.c_str(), s.fill, st.median_us,
                    st.p90_us, st.p99_us, st.cpu_median_us, st.prefill_s, st.mean_us);
        std::fflush(stdout);
    }
    std::filesystem::remove_all(base);
    return 0;
}
