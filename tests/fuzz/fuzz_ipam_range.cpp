// Range strings as a NAD author writes them: the input's lines are range, range_start,
// range_end and exclude entries; each combination → a config or a clean error, and an accepted
// range must allocate (in memory) without tripping the 128-bit arithmetic.
#include <string>
#include <vector>

#include "fuzz_support.hpp"

#include "rdmanet/ipam/core/allocator.hpp"
#include "rdmanet/ipam/core/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<std::string> lines;
    std::string current;
    for (char c : rdmanet::fuzz::as_text(data, size)) {
        if (c == '\n') {
            lines.push_back(std::move(current));
            current.clear();
        } else {
            current.push_back(c);
        }
    }
    lines.push_back(std::move(current));

    nlohmann::json ipam = {{"type", "rdmanet-ipam"}, {"range", lines[0]}};
    if (lines.size() > 1 && !lines[1].empty()) ipam["range_start"] = lines[1];
    if (lines.size() > 2 && !lines[2].empty()) ipam["range_end"] = lines[2];
    if (lines.size() > 3) ipam["exclude"] = std::vector<std::string>(lines.begin() + 3, lines.end());

    rdmanet::fuzz::expect_clean_rejection([&] {
        const auto config = rdmanet::ipam::parse_ipam_config(ipam);
        for (const auto& range : config.ranges) {
            // Empty pool: the lowest usable offset (or range_full when exclusions cover all).
            (void)rdmanet::ipam::decide(range, std::nullopt, std::nullopt, {});
        }
    });
    return 0;
}
