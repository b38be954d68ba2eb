// YAML -> JSON for rdmanetctl's inputs (network specs, manifests), built straight from yaml-cpp's
// parse events rather than through YAML::LoadAll and YAML::Node.
//
// Why events: Debian's yaml-cpp 0.7 LoadAll loops forever, allocating, on some malformed input
// (upstream PR jbeder/yaml-cpp#1319: the parser reports the same empty document again and again
// without consuming the offending token; our fuzz_render target found a 282-byte example, kept in
// tests/fuzz/regressions/fuzz_render/). Driving the parser ourselves lets us notice that it has
// stopped advancing. It also bounds what a hostile document can cost: nesting depth, and the
// total size after aliases are expanded (a "billion laughs" document is a few hundred bytes).
#include <cerrno>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include "rdmanet/base/json_limits.hpp"
#include "rdmanet/cni/translate/render.hpp"

namespace rdmanet::cni::translate {

namespace {

using nlohmann::json;

// The same nesting and size limits as every JSON input: YAML is read into the same trees.
constexpr std::size_t kMaxDepth = base::kMaxJsonDepth;  // manifests are shallow
constexpr std::size_t kMaxValues = 1u << 20;            // JSON values per input, aliases expanded

std::string where(const YAML::Mark& mark) {
    return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
}

// Builds one document's JSON from its events. Map keys must be scalars (JSON's keys are strings);
// they keep their text as written ("8" stays "8"), as Kubernetes does.
class JsonBuilder final : public YAML::EventHandler {
public:
    explicit JsonBuilder(std::size_t& values_left) : values_left_(values_left) {}

    const YAML::Mark& start() const { return start_; }
    bool empty() const { return !root_ || root_->is_null(); }
    json take() { return std::move(*root_); }

    void OnDocumentStart(const YAML::Mark& mark) override { start_ = mark; }
    void OnDocumentEnd() override {}

    void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { add(mark, nullptr, anchor, true); }
    void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  const std::string& value) override {
        // yaml-cpp tags plain scalars "?" and quoted ones "!" (non-specific tags).
        const bool key = expecting_key();
        add(mark, key || tag != "?" ? json(value) : yaml_plain_scalar(value), anchor, true);
    }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
        const auto it = anchors_.find(anchor);
        if (it == anchors_.end()) throw std::runtime_error("unknown alias at " + where(mark));
        // Every use copies the anchored value: charge its whole size against the budget.
        charge(mark, count_values(it->second));
        add(mark, it->second, YAML::NullAnchor, false);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                         YAML::EmitterStyle::value) override {
        open(mark, json::array(), anchor);
    }
    void OnSequenceEnd() override { close(); }
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                    YAML::EmitterStyle::value) override {
        open(mark, json::object(), anchor);
    }
    void OnMapEnd() override { close(); }

private:
    struct Frame {
        json value;
        YAML::anchor_t anchor;
        std::optional<std::string> key;  // maps: the key whose value comes next
    };

    bool expecting_key() const { return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().key; }

    void charge(const YAML::Mark& mark, std::size_t n) {
        if (n > values_left_)
            throw std::runtime_error("YAML expands to more than " + std::to_string(kMaxValues) + " values (at " +
                                     where(mark) + "); aliases repeated too often?");
        values_left_ -= n;
    }

    static std::size_t count_values(const json& j) {
        std::size_t n = 1;
        if (j.is_structured())
            for (const auto& child : j) n += count_values(child);
        return n;
    }

    void add(const YAML::Mark& mark, json value, YAML::anchor_t anchor, bool charge_one) {
        if (charge_one) charge(mark, 1);
        if (anchor != YAML::NullAnchor) anchors_[anchor] = value;
        if (stack_.empty()) {
            root_ = std::move(value);
            return;
        }
        Frame& top = stack_.back();
        if (top.value.is_array()) {
            top.value.push_back(std::move(value));
        } else if (!top.key) {
            if (!value.is_string()) throw std::runtime_error("YAML map keys must be scalars (at " + where(mark) + ")");
            top.key = value.get<std::string>();
        } else {
            top.value[*top.key] = std::move(value);
            top.key.reset();
        }
    }

    void open(const YAML::Mark& mark, json container, YAML::anchor_t anchor) {
        if (expecting_key()) throw std::runtime_error("YAML map keys must be scalars (at " + where(mark) + ")");
        if (stack_.size() >= kMaxDepth)
            throw std::runtime_error("YAML nested more than " + std::to_string(kMaxDepth) + " levels deep (at " +
                                     where(mark) + ")");
        charge(mark, 1);
        marks_.push_back(mark);
        stack_.push_back(Frame{std::move(container), anchor, std::nullopt});
    }

    void close() {
        Frame done = std::move(stack_.back());
        stack_.pop_back();
        const YAML::Mark mark = marks_.back();
        marks_.pop_back();
        // The container was charged when opened and its children as they came: add() must not
        // charge it again.
        add(mark, std::move(done.value), done.anchor, false);
    }

    std::size_t& values_left_;
    YAML::Mark start_;
    std::optional<json> root_;
    std::vector<Frame> stack_;
    std::vector<YAML::Mark> marks_;
    std::map<YAML::anchor_t, json> anchors_;
};

}  // namespace

// Plain (unquoted) scalars typed as the YAML 1.2 core schema does, which is what kubectl and
// Kubernetes apply to manifests: "true" is a bool, "8" an int, "0000:af:06.0" a string.
json yaml_plain_scalar(const std::string& s) {
    static const std::regex kNull("null|Null|NULL|~|");
    static const std::regex kTrue("true|True|TRUE");
    static const std::regex kFalse("false|False|FALSE");
    static const std::regex kInt("[-+]?[0-9]+");
    static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
    if (std::regex_match(s, kNull)) return nullptr;
    if (std::regex_match(s, kTrue)) return true;
    if (std::regex_match(s, kFalse)) return false;
    if (std::regex_match(s, kInt)) {
        errno = 0;
        char* end = nullptr;
        if (s[0] == '-') {
            long long v = std::strtoll(s.c_str(), &end, 10);
            if (errno == 0) return v;
        } else {
            unsigned long long v = std::strtoull(s.c_str(), &end, 10);
            if (errno == 0) return v;
        }
        return s;  // out of range: keep the text rather than a wrong number
    }
    if (std::regex_match(s, kFloat)) return std::strtod(s.c_str(), nullptr);
    return s;
}

std::vector<json> yaml_documents_to_json(const std::string& text) {
    if (text.size() > base::kMaxJsonBytes)
        throw std::runtime_error("input of " + std::to_string(text.size()) + " bytes is larger than the limit of " +
                                 std::to_string(base::kMaxJsonBytes) + " bytes");
    std::istringstream stream(text);
    std::vector<json> out;
    std::size_t values_left = kMaxValues;
    try {
        YAML::Parser parser(stream);
        std::optional<int> previous_start;
        for (;;) {
            JsonBuilder doc(values_left);
            if (!parser.HandleNextDocument(doc)) break;
            // Each document starts after the one before. yaml-cpp 0.7 can report the same empty
            // document forever on malformed input without consuming anything (see the top).
            if (previous_start && doc.start().pos <= *previous_start)
                throw std::runtime_error("not valid YAML: cannot parse at " + where(doc.start()));
            previous_start = doc.start().pos;
            if (doc.empty()) continue;  // an empty document between "---" separators
            out.push_back(doc.take());
        }
    } catch (const YAML::Exception& e) {
        throw std::runtime_error(std::string("not valid YAML: ") + e.what());
    }
    return out;
}

}  // namespace rdmanet::cni::translate
