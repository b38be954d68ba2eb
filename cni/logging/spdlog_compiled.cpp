// spdlog, compiled once for the whole project instead of in every file that logs.
//
// Header-only spdlog makes each including file generate code for the logger, the registry and
// the pattern formatter: ~5 s of g++ -O2 -g per file, in 35 of the product's 119 files and in
// the tests (a third of the product's compile time). Every target that uses spdlog links
// rdmanet_spdlog, which defines SPDLOG_COMPILED_LIB for all of them, so the headers only declare
// those functions and this file defines them. It is still linked into the binaries (no libspdlog.so at load time). fmt stays
// header-only: its inline code is cheap to compile.
//
// The set below covers what spdlog.h declares (common, logger, registry with its periodic
// flusher, pattern formatter, log messages, backtracer, os helpers) plus the sinks instantiated
// here: the default logger's colour console sink (the registry creates it at start-up) and
// base_sink for both mutex kinds (the plugin's own fd sink uses null_mutex).
#ifndef SPDLOG_COMPILED_LIB
#error "rdmanet_spdlog defines SPDLOG_COMPILED_LIB for every file that includes spdlog"
#endif

#include <mutex>

#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/spdlog-inl.h>

template class SPDLOG_API spdlog::sinks::base_sink<std::mutex>;
template class SPDLOG_API spdlog::sinks::base_sink<spdlog::details::null_mutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_sink<spdlog::details::console_nullmutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_mutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_nullmutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_mutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_nullmutex>;
