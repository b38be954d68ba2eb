#pragma once
// The ending every rdmanetctl subcommand shares: its body returns the process exit status, and
// an exception (a bad option value, an unreadable store, an API server that refuses) becomes one
// line "<who>: <message>" on `err` and exit status 1, never an uncaught exception.
#include <exception>
#include <ostream>
#include <string_view>

namespace rdmanet::base {

template <class Body>
int exit_status_of(std::ostream& err, std::string_view who, Body&& body) {
    try {
        return body();
    } catch (const std::exception& e) {
        err << who << ": " << e.what() << '\n';
        return 1;
    }
}

}  // namespace rdmanet::base
