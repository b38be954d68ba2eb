// HTTP/1.1 client over tls_stream.hpp's connection: see http.hpp.
#include "rdmanet/ipam/kube/http.hpp"

#include <algorithm>
#include <array>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/http_wire.hpp"
#include "tls_stream.hpp"

namespace rdmanet::ipam::kube {

namespace {
constexpr std::chrono::milliseconds kMaxConnectTime{10'000};
}  // namespace

struct HttpClient::Impl {
    ServerUrl url;
    std::unique_ptr<TlsContext> tls;   // null for http://
    std::vector<std::string> headers;  // sent with every request (Host, User-Agent, Authorization)
    std::unique_ptr<Connection> connection;
    long connects = 0;

    // One exchange on `connection`; the parsed answer, or TransportError.
    HttpResponse exchange(const std::string& request, const RequestOptions& options, Clock::time_point deadline,
                          bool& answer_started) {
        connection->write_all(request, deadline);
        ResponseParser parser(options.discard_success_body, options.max_body);
        std::array<char, 16 * 1024> buf;
        try {
            while (!parser.done()) {
                const std::size_t n = connection->read_some(buf.data(), buf.size(), deadline);
                if (n == 0) {
                    answer_started = parser.started();
                    parser.end_of_stream();
                    break;
                }
                const std::size_t used = parser.feed(std::string_view(buf.data(), n));
                answer_started = true;
                if (used < n) {  // bytes past the answer: the connection is out of step
                    ParsedResponse p = parser.take();
                    connection.reset();
                    return HttpResponse{p.status, std::move(p.body), p.retry_after};
                }
            }
        } catch (const ProtocolError& e) {
            connection.reset();
            throw TransportError(
                TransportFailure::protocol,
                !parser.started() || std::string_view(e.what()).find("closed") != std::string_view::npos, false,
                std::string("the answer: ") + e.what());
        }
        ParsedResponse p = parser.take();
        if (!p.keep_alive) connection.reset();
        return HttpResponse{p.status, std::move(p.body), p.retry_after};
    }
};

HttpClient::HttpClient(const KubeConfig& config) : impl_(std::make_unique<Impl>()) {
    try {
        impl_->url = parse_server_url(config.server);
    } catch (const std::invalid_argument& e) {
        config_error(config.source + ": server " + config.server + ": " + e.what());
    }
    if (!header_value_safe(config.token)) {
        config_error(config.source +
                     ": the bearer token contains a control character (CR, LF, ...), which would "
                     "end the Authorization header: refused (check the token's file for stray bytes)");
    }
    if (!impl_->url.tls && !config.token.empty()) {
        config_error(config.source + ": refusing to send a bearer token over plain http to " + config.server);
    }
    if (impl_->url.tls) impl_->tls = std::make_unique<TlsContext>(config);
    impl_->headers.push_back("Host: " + impl_->url.host_header());
    impl_->headers.push_back("User-Agent: rdmanet-ipam");
    if (!config.token.empty()) impl_->headers.push_back("Authorization: Bearer " + config.token);
}

HttpClient::~HttpClient() = default;

long HttpClient::connections() const { return impl_->connects; }

HttpResponse HttpClient::send(std::string_view method, const std::string& path, const std::string& body,
                              std::string_view content_type, std::chrono::milliseconds timeout,
                              const RequestOptions& options) {
    Impl& s = *impl_;
    const auto start = Clock::now();
    const auto deadline = start + std::max(timeout, std::chrono::milliseconds(1));
    const auto connect_deadline = start + std::min(std::max(timeout, std::chrono::milliseconds(1)), kMaxConnectTime);
    const bool with_body = !(method == "GET" || (method == "DELETE" && body.empty()));
    std::vector<std::string> headers = s.headers;
    headers.push_back("Accept: " + std::string(options.accept.empty() ? "application/json" : options.accept));
    if (with_body) headers.push_back("Content-Type: " + std::string(content_type));
    const std::string request = format_request(method, s.url.path_prefix + path, headers, body, with_body);

    if (s.connection && !s.connection->reusable()) s.connection.reset();
    // A kept-alive connection the server closed just as this request went out fails without any
    // answer: sent once more on a new connection, as a browser (and libcurl) does. The new
    // connection shows in connections(), so a caller can tell the request may have been applied.
    for (int attempt = 0;; ++attempt) {
        const bool reused = s.connection != nullptr;
        if (!s.connection) {
            s.connection = std::make_unique<Connection>(s.url, s.tls.get(), connect_deadline, deadline);
            ++s.connects;
        }
        bool answer_started = false;
        try {
            return s.exchange(request, options, deadline, answer_started);
        } catch (const TransportError& e) {
            s.connection.reset();
            const bool silent_close = e.kind == TransportFailure::send || e.kind == TransportFailure::receive ||
                                      e.kind == TransportFailure::protocol;
            if (reused && attempt == 0 && silent_close && !answer_started) continue;
            throw;
        }
    }
}

}  // namespace rdmanet::ipam::kube
