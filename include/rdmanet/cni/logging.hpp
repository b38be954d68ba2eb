#pragma once
// Logging goes to the configured file only: stdout is the CNI result and stderr is read by
// runtimes when stdout is empty. Without a logFile nothing is logged.
#include <string>

#include <spdlog/spdlog.h>

namespace rdmanet::cni {

// Installs the default spdlog logger: an append-mode file sink at `level`
// (trace|debug|info|warn|error|off), each line prefixed with `context`
// ("<network> <container id> <ifname>"). An unwritable file never fails the plugin: logging
// is then disabled.
void setup_logging(const std::string& file, const std::string& level, const std::string& context);

}  // namespace rdmanet::cni
