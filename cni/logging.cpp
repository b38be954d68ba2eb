#include "rdmanet/cni/logging.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/null_sink.h>

namespace rdmanet::cni {

void setup_logging(const std::string& file, const std::string& level, const std::string& context) {
    // Loggers are built directly rather than through spdlog's registry factories: the registry
    // already holds the previous default logger under the same name and would refuse a new one.
    // The plugin is single-threaded, so single-threaded sinks suffice.
    spdlog::sink_ptr sink;
    if (!file.empty() && level != "off") {
        try {
            sink = std::make_shared<spdlog::sinks::basic_file_sink_st>(file, /*truncate=*/false);
        } catch (const spdlog::spdlog_ex&) {
            sink.reset();   // an unwritable log must not turn into a failed ADD
        }
    }
    if (!sink) sink = std::make_shared<spdlog::sinks::null_sink_st>();
    auto logger = std::make_shared<spdlog::logger>("rdmanet", std::move(sink));
    logger->set_level(spdlog::level::from_str(level));
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z [%l] pid %P " + context + ": %v");
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(std::move(logger));
}

}  // namespace rdmanet::cni
