#pragma once
// Prometheus text exposition format 0.0.4: "# HELP", "# TYPE", then one sample per line,
// `name{label="value",...} number`. Label values are escaped (backslash, quote, newline) as the
// format requires; every family's samples stay together.
#include <string>
#include <utility>
#include <vector>

namespace rdmanet::cni::node {

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
public:
    // Starts a family; `type` is "counter", "gauge" or "histogram".
    void family(const std::string& name, const std::string& type, const std::string& help);
    // One sample of the current family (for a histogram: name_bucket / name_sum / name_count).
    void sample(const std::string& name, const Labels& labels, double value);
    const std::string& str() const { return text_; }

    static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

private:
    std::string text_;
};

std::string escape_label_value(const std::string& value);
// Go's strconv-like rendering Prometheus parses: integers without exponent, +Inf, NaN.
std::string format_sample_value(double value);

}  // namespace rdmanet::cni::node
