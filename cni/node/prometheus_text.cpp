#include "rdmanet/cni/node/prometheus_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace rdmanet::cni::node {

std::string escape_label_value(const std::string& value) {
    std::string out;
    for (char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string format_sample_value(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    char buf[64];
    if (value == std::floor(value) && std::fabs(value) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.0f", value);
        return buf;
    }
    // The shortest text that reads back as the same double (timestamps keep their fraction).
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    return ec == std::errc() ? std::string(buf, end) : std::string("NaN");
}

void PrometheusText::family(const std::string& name, const std::string& type, const std::string& help) {
    text_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void PrometheusText::sample(const std::string& name, const Labels& labels, double value) {
    text_ += name;
    if (!labels.empty()) {
        text_ += '{';
        for (std::size_t i = 0; i < labels.size(); ++i)
            text_ += (i ? "," : "") + labels[i].first + "=\"" + escape_label_value(labels[i].second) + "\"";
        text_ += '}';
    }
    text_ += ' ' + format_sample_value(value) + '\n';
}

}  // namespace rdmanet::cni::node
