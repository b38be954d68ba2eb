#pragma once
// An undo stack for ADD: every step that changes something pushes how to undo it; if ADD fails,
// the stack unwinds in reverse order. Undo steps must not throw past the stack: their failures are
// logged and the unwinding continues, so one failed undo never leaks the rest.
//
// The stack unwinds in its destructor, while the enclosing function's locals are destroyed in
// reverse order of declaration: a local declared after the Rollback is already gone when the
// undo steps run. So an undo step captures by reference only what is declared before the
// Rollback (or lives longer, like the call's context), and takes anything else by value or
// through a holder declared before it.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

namespace rdmanet::cni {

class Rollback {
public:
    Rollback() = default;
    Rollback(const Rollback&) = delete;
    Rollback& operator=(const Rollback&) = delete;
    ~Rollback() { unwind(); }

    void push(std::string what, std::function<void()> undo) { steps_.emplace_back(std::move(what), std::move(undo)); }
    // ADD succeeded: keep everything.
    void commit() { steps_.clear(); }

    void unwind() noexcept {
        while (!steps_.empty()) {
            auto [what, undo] = std::move(steps_.back());
            steps_.pop_back();
            try {
                undo();
                spdlog::info("rollback: {}", what);
            } catch (const std::exception& e) {
                spdlog::error("rollback: {} failed: {}", what, e.what());
            }
        }
    }

private:
    std::vector<std::pair<std::string, std::function<void()>>> steps_;
};

}  // namespace rdmanet::cni
