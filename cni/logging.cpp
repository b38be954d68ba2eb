#include "rdmanet/cni/logging.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/null_sink.h>

namespace rdmanet::cni {

void setup_logging(const std::string& file, const std::string& level, const std::string& context) {
    std::shared_ptr<spdlog::logger> logger;
    if (!file.empty() && level != "off") {
        try {
            logger = spdlog::basic_logger_mt("rdmanet", file, /*truncate=*/false);
        } catch (const spdlog::spdlog_ex&) {
            logger.reset();   // an unwritable log must not turn into a failed ADD
        }
    }
    if (!logger) logger = std::make_shared<spdlog::logger>("rdmanet", std::make_shared<spdlog::sinks::null_sink_mt>());
    logger->set_level(spdlog::level::from_str(level));
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z [%l] pid %P " + context + ": %v");
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
}

}  // namespace rdmanet::cni
