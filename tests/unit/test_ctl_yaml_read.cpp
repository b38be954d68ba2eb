// rdmanetctl's YAML reader (cni/translate/yaml_read.cpp): what it builds from anchors, aliases and
// several documents, and the bounds that keep a hostile or broken file from hanging or
// exhausting the CLI — including yaml-cpp 0.7's LoadAll loop that fuzz_render found.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>

#include "rdmanet/cni/translate/render.hpp"
#include "support/build_paths.hpp"

using namespace rdmanet::cni::translate;
using nlohmann::json;

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    return {std::istreambuf_iterator<char>(in), {}};
}

std::string error_of(const std::string& text) {
    try {
        yaml_documents_to_json(text);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("yaml: anchors and aliases expand to copies, on scalars, lists and maps", "[ctl][yaml]") {
    const auto j = yaml_to_json(
        "base: &b {mtu: 9000, tags: &t [a, b]}\n"
        "copy: *b\n"
        "tags: *t\n"
        "name: &n ib0\n"
        "again: *n\n");
    CHECK(j["copy"] == json({{"mtu", 9000}, {"tags", {"a", "b"}}}));
    CHECK(j["tags"] == json({"a", "b"}));
    CHECK(j["again"] == "ib0");
}

TEST_CASE("yaml: map keys keep their text, quoted or not", "[ctl][yaml]") {
    const auto j = yaml_to_json("8: eight\n'true': t\n'null': n\n");
    CHECK(j["8"] == "eight");
    CHECK(j["true"] == "t");
    CHECK(j["null"] == "n");
}

TEST_CASE("yaml: empty documents between separators are skipped", "[ctl][yaml]") {
    const auto docs = yaml_documents_to_json("---\n---\na: 1\n---\n---\nb: 2\n...\n");
    REQUIRE(docs.size() == 2);
    CHECK(docs[0] == json({{"a", 1}}));
    CHECK(docs[1] == json({{"b", 2}}));
    CHECK(yaml_documents_to_json("").empty());
    CHECK(yaml_documents_to_json("# only a comment\n").empty());
}

TEST_CASE("yaml: a map or list as a map key is refused with its position", "[ctl][yaml]") {
    CHECK_THAT(error_of("? [a, b]\n: x\n"), Catch::Contains("map keys must be scalars"));
    CHECK_THAT(error_of("? {a: 1}\n: x\n"), Catch::Contains("line 1"));
    // A null key (plain `null`, `~` or nothing) has no text to keep: refused too.
    CHECK_THAT(error_of("null: n\n"), Catch::Contains("map keys must be scalars"));
}

TEST_CASE("yaml: nesting deeper than 64 levels is refused", "[ctl][yaml]") {
    const std::string deep = std::string(70, '[') + std::string(70, ']');
    CHECK_THAT(error_of(deep), Catch::Contains("64 levels"));
    const std::string ok = std::string(60, '[') + std::string(60, ']');
    CHECK(error_of(ok).empty());
}

TEST_CASE("yaml: an alias bomb is refused instead of expanding to gigabytes", "[ctl][yaml]") {
    // Ten levels of ten aliases each: 10^10 values if expanded.
    std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i <= 10; ++i) {
        const std::string prev = "*a" + std::to_string(i - 1);
        bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
        for (int k = 0; k < 10; ++k) bomb += (k ? ", " : "") + prev;
        bomb += "]\n";
    }
    CHECK_THAT(error_of(bomb), Catch::Contains("more than 1048576 values"));
}

TEST_CASE("yaml: inputs on which yaml-cpp 0.7 LoadAll loops forever are errors", "[ctl][yaml]") {
    // Upstream jbeder/yaml-cpp#1319: the parser reports the same empty document again and again
    // without consuming the token. Found by fuzz_render; the files are its regression seeds.
    for (const char* name : {"loadall-loop.yaml", "comma.yaml"}) {
        INFO(name);
        const auto text = read_file(rdmanet::test::source_dir() + "/tests/fuzz/regressions/fuzz_render/" + name);
        CHECK_THAT(error_of(text), Catch::Contains("not valid YAML: cannot parse at line"));
        RenderOptions options;
        CHECK_THROWS_WITH(render_documents(text, options), Catch::Contains("not valid YAML"));
    }
}

TEST_CASE("yaml: syntax errors name the position", "[ctl][yaml]") {
    CHECK_THAT(error_of("a: [1, 2\n"), Catch::StartsWith("not valid YAML: "));
    CHECK_THAT(error_of("a: b: c\n"), Catch::StartsWith("not valid YAML: "));
}
