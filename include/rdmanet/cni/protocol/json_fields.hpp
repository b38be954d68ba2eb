#pragma once
// The CNI layer's typed JSON reader: base::JsonFields throwing cni::Error with the caller's code,
// so that config and result parsing share one wording ("runtimeConfig.mac must be a string, got
// 5"). JSON null counts as absent, as in Go's decoder.
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "rdmanet/base/json_fields.hpp"
#include "rdmanet/cni/protocol/error.hpp"

namespace rdmanet::cni {

// Throws Error(code, message, details).
struct RaiseError {
    ErrorCode code;
    [[noreturn]] void operator()(std::string message, std::string details) const {
        throw Error(code, std::move(message), std::move(details));
    }
};

class JsonFields : public base::JsonFields<RaiseError> {
public:
    using Base = base::JsonFields<RaiseError>;

    // `object` must outlive this reader. `path` prefixes member names ("" at the top level).
    JsonFields(const nlohmann::json& object, std::string path, ErrorCode code)
        : Base(object, std::move(path), RaiseError{code}) {}
    // The readers the base hands out (for_each_object, child) convert implicitly.
    JsonFields(Base fields) : Base(std::move(fields)) {}  // NOLINT(google-explicit-constructor)

    // Wraps `value` after checking it is an object; `path` names it.
    static JsonFields of_object(const nlohmann::json& value, std::string path, ErrorCode code) {
        return Base::of_object(value, std::move(path), RaiseError{code});
    }

    ErrorCode code() const { return raise().code; }
};

}  // namespace rdmanet::cni
