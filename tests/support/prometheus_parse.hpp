#pragma once
// A strict reader of the Prometheus text exposition format 0.0.4 for tests: every sample line
// must parse (name, optional {label="value",...} with the format's escapes, a number), and every
// sample must belong to a family announced by a preceding "# TYPE" line. Throws
// std::runtime_error naming the offending line otherwise.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rdmanet::test {

struct PromSample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

struct PromExposition {
    std::map<std::string, std::string> types;  // family -> counter/gauge/histogram/...
    std::vector<PromSample> samples;

    // The value of the one sample with `name` and exactly `labels`; nullopt when absent.
    std::optional<double> value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const;
};

PromExposition parse_prometheus_text(const std::string& text);

// GET http://127.0.0.1:<port><path> over a plain socket: {status code, headers + body split}.
struct HttpGetResult {
    int status = 0;
    std::string content_type;
    std::string body;
};
HttpGetResult http_get_local(int port, const std::string& path);

}  // namespace rdmanet::test
