#pragma once
// What every CNI executable of ours shares (like the Go library's skel): environment validation,
// the about text, VERSION, and turning any failure into the spec's error JSON on stdout with a
// non-zero exit.
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include "rdmanet/cni/protocol/env.hpp"

namespace rdmanet::cni {

// Handles ADD/DEL/CHECK/GC/STATUS: parses `input`, does the work, prints a result if any.
using VerbHandler = std::function<void(const Environment& env, const std::string& input, std::ostream& out)>;

// Returns the process exit status.
int run_skel(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err, std::string_view about,
             const VerbHandler& handle);

}  // namespace rdmanet::cni
