#pragma once
// Logging goes to the configured file only: stdout is the CNI result and stderr is read by
// runtimes when stdout is empty. Without a logFile nothing is logged.
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

namespace rdmanet::cni {

struct NodePolicy;

// Installs the default spdlog logger: an append-mode file sink at `level`
// (trace|debug|info|warn|error|off), each line prefixed with `context`
// ("<network> <container id> <ifname>"). An unwritable file never fails the plugin: logging
// is then disabled. Without a policy the file is opened as given (rdmanetctl, tests).
void setup_logging(const std::string& file, const std::string& level, const std::string& context);

// The same for a file named by a network configuration (`key` is "logFile" or "ipam.log_file"):
// the file must lie inside policy.log_dir and is opened below it without following symlinks,
// created 0600 (missing directories 0700). A file outside the log dir, a symlink or a
// non-regular file below it is refused: with `strict` (ADD, CHECK) by refuse() -> code 7 naming
// the key and the log dir, nothing created; otherwise (DEL, GC, STATUS: teardown must not fail
// over a log) the refusal is only audited and logging stays off. Other open failures (EACCES,
// ENOSPC) disable logging, as before.
void setup_policed_logging(const NodePolicy& policy, std::string_view key, const std::string& file,
                           const std::string& level, const std::string& context, bool strict);

}  // namespace rdmanet::cni
