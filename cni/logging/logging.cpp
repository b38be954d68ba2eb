#include "rdmanet/cni/logging/logging.hpp"

#include <cerrno>
#include <fcntl.h>
#include <memory>
#include <string>
#include <unistd.h>

#include <spdlog/details/null_mutex.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/null_sink.h>

#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/policy/checks.hpp"
#include "rdmanet/base/confined_file.hpp"
#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

namespace {

// A sink on a file descriptor we opened ourselves (O_NOFOLLOW, 0600, O_APPEND): spdlog's file
// sinks open by name and would follow a symlink. One write per line, so lines of concurrent
// plugins sharing a log do not interleave.
class FdSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
public:
    explicit FdSink(base::UniqueFd fd) : fd_(std::move(fd)) {}

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        spdlog::memory_buf_t formatted;
        formatter_->format(msg, formatted);
        const char* data = formatted.data();
        std::size_t left = formatted.size();
        while (left > 0) {
            const ssize_t n = ::write(fd_.get(), data, left);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return;  // a full disk must not fail the plugin
            data += n;
            left -= static_cast<std::size_t>(n);
        }
    }
    void flush_() override {}

private:
    base::UniqueFd fd_;
};

// The line's context (command, network, container, interface) is text from the runtime and the
// network config: it is printed by this flag as written, never made part of the pattern, where a
// '%' would be read as a flag (an interface "net%d" would log as "net26", the day of the month).
class ContextFlag final : public spdlog::custom_flag_formatter {
public:
    explicit ContextFlag(std::string text) : text_(std::move(text)) {}
    void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
        dest.append(text_.data(), text_.data() + text_.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<ContextFlag>(text_); }

private:
    std::string text_;
};

void install(spdlog::sink_ptr sink, const std::string& level, const std::string& context) {
    // Loggers are built directly rather than through spdlog's registry factories: the registry
    // already holds the previous default logger under the same name and would refuse a new one.
    if (!sink) sink = std::make_shared<spdlog::sinks::null_sink_st>();
    auto logger = std::make_shared<spdlog::logger>("rdmanet", std::move(sink));
    logger->set_level(spdlog::level::from_str(level));
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<ContextFlag>('*', context).set_pattern("%Y-%m-%dT%H:%M:%S.%e%z [%l] pid %P %*: %v");
    logger->set_formatter(std::move(formatter));
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(std::move(logger));
}

}  // namespace

void setup_logging(const std::string& file, const std::string& level, const std::string& context) {
    spdlog::sink_ptr sink;
    if (!file.empty() && level != "off") {
        base::UniqueFd fd(::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (fd) sink = std::make_shared<FdSink>(std::move(fd));  // else: an unwritable log must not fail
    }
    install(std::move(sink), level, context);
}

void setup_policed_logging(const NodePolicy& policy, std::string_view key, const std::string& file,
                           const std::string& level, const std::string& context, bool strict) {
    install(nullptr, "off", context);  // until the file is accepted, log nowhere
    if (file.empty()) return;
    if (!base::is_path_inside(file, policy.log_dir)) {
        if (strict) check_log_file(policy, key, file);  // refuses: code 7, audited
        try {
            check_log_file(policy, key, file);
        } catch (const Error&) {
            // Audited by refuse(); teardown goes on without a log.
        }
        return;
    }
    if (level == "off") return;
    try {
        auto fd = base::open_confined(policy.log_dir, file, O_WRONLY | O_APPEND | O_CREAT, 0600, base::CreateDirs::yes);
        install(std::make_shared<FdSink>(std::move(fd)), level, context);
    } catch (const base::ConfinedFileError& e) {
        const bool planted = e.errno_value == ELOOP || e.errno_value == EINVAL || e.errno_value == ENOTDIR;
        if (!planted) return;  // unwritable (EACCES, ENOSPC, read-only fs): logging off, as always
        try {
            refuse(policy, ErrorCode::invalid_config,
                   std::string(key) + " " + text::quote(file) + " refused: " + e.what(),
                   "log files live as regular files in " + policy.log_dir + ", reached without symlinks");
        } catch (const Error&) {
            if (strict) throw;
        }
    }
}

}  // namespace rdmanet::cni
