// The Kubernetes client's HTTP/1.1 framing without a socket (ipam/kube/http_wire.hpp).
#include <catch2/catch.hpp>

#include <string>

#include "rdmanet/ipam/kube/http_wire.hpp"

using namespace rdmanet::ipam::kube;

namespace {
// Feeds `text` in pieces of `step` bytes, as a connection might deliver it.
ParsedResponse parse(const std::string& text, std::size_t step, bool discard = false) {
    ResponseParser p(discard);
    for (std::size_t i = 0; i < text.size() && !p.done(); i += step) p.feed(std::string_view(text).substr(i, step));
    if (!p.done()) p.end_of_stream();
    return p.take();
}
}  // namespace

TEST_CASE("http wire: server URLs split into scheme, host, port and prefix", "[kube][http]") {
    auto u = parse_server_url("https://10.96.0.1:443");
    CHECK((u.tls && u.host == "10.96.0.1" && u.port == "443" && u.host_is_ip && u.path_prefix.empty()));
    CHECK(u.host_header() == "10.96.0.1");
    u = parse_server_url("https://[fd00::1]:6443/");
    CHECK((u.host == "fd00::1" && u.port == "6443" && u.host_is_ip && u.host_header() == "[fd00::1]:6443"));
    u = parse_server_url("https://api.example.com/k8s/clusters/c-1/");
    CHECK((u.host == "api.example.com" && u.port == "443" && !u.host_is_ip && u.path_prefix == "/k8s/clusters/c-1"));
    u = parse_server_url("http://127.0.0.1:8080");
    CHECK((!u.tls && u.host_header() == "127.0.0.1:8080"));
    CHECK_THROWS_WITH(parse_server_url("ftp://x"), Catch::Contains("https://"));
    CHECK_THROWS_WITH(parse_server_url("https://:443"), Catch::Contains("no host"));
    CHECK_THROWS_WITH(parse_server_url("https://h:99999"), Catch::Contains("port"));
    CHECK_THROWS_WITH(parse_server_url("https://user:pw@h"), Catch::Contains("credentials"));
    CHECK_THROWS_WITH(parse_server_url("https://[fd00::1"), Catch::Contains("unclosed"));
}

TEST_CASE("http wire: a request carries Content-Length only with a body", "[kube][http]") {
    CHECK(format_request("GET", "/api", {"Host: h"}, "", false) == "GET /api HTTP/1.1\r\nHost: h\r\n\r\n");
    CHECK(format_request("PATCH", "/a", {"Host: h", "Content-Type: x"}, "[1]", true) ==
          "PATCH /a HTTP/1.1\r\nHost: h\r\nContent-Type: x\r\nContent-Length: 3\r\n\r\n[1]");
}

TEST_CASE("http wire: Content-Length, chunked and close-delimited bodies, in any split", "[kube][http]") {
    const std::string sized =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":12345}";
    const std::string chunked =
        "HTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\n{\"a\":\r\n6\r\n12345}\r\n0\r\nX-T: 1\r\n\r\n";
    const std::string closing = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"a\":12345}";
    for (std::size_t step : {1u, 2u, 7u, 1000u}) {
        INFO("step " << step);
        auto r = parse(sized, step);
        CHECK((r.status == 200 && r.body == "{\"a\":12345}" && r.keep_alive));
        r = parse(chunked, step);
        CHECK((r.status == 201 && r.body == "{\"a\":12345}" && r.keep_alive));
        r = parse(closing, step);
        CHECK((r.status == 200 && r.body == "{\"a\":12345}" && !r.keep_alive));
    }
}

TEST_CASE("http wire: Retry-After, interim 100, 204, HTTP/1.0 and a dropped success body", "[kube][http]") {
    auto r = parse("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\n{}", 5);
    CHECK((r.status == 429 && r.retry_after == std::chrono::milliseconds(3000) && r.body == "{}"));
    r = parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 3);
    CHECK((r.status == 204 && r.body.empty() && r.keep_alive));
    r = parse("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 4);
    CHECK((r.status == 200 && !r.keep_alive));
    r = parse("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody", 3, true);
    CHECK((r.status == 200 && r.body.empty() && r.keep_alive));
    r = parse("HTTP/1.1 409 Conflict\r\nContent-Length: 4\r\n\r\nwhy!", 3, true);  // errors keep theirs
    CHECK(r.body == "why!");
}

TEST_CASE("http wire: the parser stops at the end of one answer", "[kube][http]") {
    ResponseParser p;
    const std::string two = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 200 OK\r\n";
    CHECK(p.feed(two) == two.find("aHTTP") + 1);
    CHECK(p.done());
}

TEST_CASE("http wire: broken framing and lost answers are errors", "[kube][http]") {
    ResponseParser none;
    CHECK_FALSE(none.started());
    CHECK_THROWS_WITH(none.end_of_stream(), Catch::Contains("without an answer"));
    ResponseParser half;
    half.feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    CHECK(half.started());
    CHECK_THROWS_WITH(half.end_of_stream(), Catch::Contains("middle of the answer"));
    CHECK_THROWS_AS(ResponseParser().feed("SSH-2.0-OpenSSH\r\n"), ProtocolError);
    CHECK_THROWS_AS(ResponseParser().feed("HTTP/1.1 200 OK\r\nContent-Length: x\r\n"), ProtocolError);
    CHECK_THROWS_AS(ResponseParser().feed("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n"),
                    ProtocolError);
    CHECK_THROWS_AS(ResponseParser().feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
                    ProtocolError);
    CHECK_THROWS_AS(ResponseParser().feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"), ProtocolError);
    CHECK_THROWS_AS(ResponseParser().feed("HTTP/1.1 200 OK\r\n" + std::string(70000, 'x')), ProtocolError);
}

// An answer that never ends (or claims to be huge) is refused while it is read, at the limit the
// request was given: memory stays at the limit, never at whatever the server sends.
TEST_CASE("http wire: bodies past the request's limit are refused while read", "[kube][http][hostile]") {
    constexpr std::size_t kLimit = 1 << 20;
    const std::string piece(64 * 1024, ' ');
    auto endless = [&](const std::string& head, const std::string& framed_piece) {
        ResponseParser p(false, kLimit);
        p.feed(head);
        std::size_t fed = 0;
        try {
            for (;; fed += framed_piece.size()) {
                p.feed(framed_piece);
                REQUIRE(fed < 4 * kLimit);  // refused long before this
            }
        } catch (const ProtocolError& e) {
            CHECK_THAT(e.what(), Catch::Contains("a body larger than 1 MiB"));
        }
        CHECK(fed <= kLimit + framed_piece.size());
    };
    endless("HTTP/1.1 200 OK\r\n\r\n", piece);  // until close
    endless("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            "10000\r\n" + piece + "\r\n");                                        // endless chunks
    endless("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "0;x\r\n");  // endless trailers
    endless("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            "0\r\n" + std::string(60, 'x') + "\r\n");  // trailers
    // A Content-Length past the limit is refused before any of the body arrives.
    CHECK_THROWS_WITH(ResponseParser(false, kLimit).feed("HTTP/1.1 200 OK\r\nContent-Length: 1048577\r\n\r\n"),
                      Catch::Contains("Content-Length 1048577"));
    // The limit holds for a dropped success body too (the connection would still read it).
    ResponseParser dropped(true, kLimit);
    dropped.feed("HTTP/1.1 200 OK\r\n\r\n");
    CHECK_THROWS_AS(
        [&] {
            for (int i = 0; i < 64; ++i) dropped.feed(piece);
        }(),
        ProtocolError);
    // Exactly at the limit is fine.
    ResponseParser at(false, kLimit);
    at.feed("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kLimit) + "\r\n\r\n");
    for (std::size_t i = 0; i < kLimit / piece.size(); ++i) at.feed(piece);
    CHECK(at.done());
    CHECK(at.take().body.size() == kLimit);
    // Endless header lines stop at 1 MiB in all.
    ResponseParser headers;
    headers.feed("HTTP/1.1 200 OK\r\n");
    CHECK_THROWS_WITH(
        [&] {
            for (int i = 0; i < 100000; ++i) headers.feed("X-Padding: " + std::string(100, 'p') + "\r\n");
        }(),
        Catch::Contains("header lines longer than 1 MiB"));
    // The default is one object's limit; lists are given theirs.
    CHECK(kMaxObjectBody >= (3u << 19));  // etcd's 1.5 MiB object fits
    CHECK(kMaxListBody > kMaxObjectBody);
}
