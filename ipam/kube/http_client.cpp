// libcurl transport: see http.hpp.
#include "rdmanet/ipam/kube/http.hpp"

#include <algorithm>
#include <cstring>

#include "curl_library.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/retry.hpp"

namespace rdmanet::ipam::kube {

namespace {

bool retryable_curl(CURLcode c) {
    switch (c) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:   // also a connection dropped during the handshake
    case CURLE_HTTP2:
        return true;
    default:
        return false;
    }
}

// Where a response body goes: stored (its size reserved up front from Content-Length, so that a
// large pool is not copied on every doubling), or dropped when the caller does not use a
// successful answer's body (a PATCH answer is the whole pool object).
struct BodySink {
    const CurlLibrary* lib;
    CURL* curl;
    std::string* out;
    bool discard_success;
    enum class Mode { undecided, keep, drop } mode = Mode::undecided;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
    auto* sink = static_cast<BodySink*>(user);
    if (sink->mode == BodySink::Mode::undecided) {
        long status = 0;
        sink->lib->easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
        if (sink->discard_success && status >= 200 && status < 300) {
            sink->mode = BodySink::Mode::drop;
        } else {
            sink->mode = BodySink::Mode::keep;
            curl_off_t length = -1;
            sink->lib->easy_getinfo(sink->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
            constexpr curl_off_t kMaxReserve = 64 << 20;   // a bogus Content-Length does not reserve more
            if (length > 0) sink->out->reserve(static_cast<std::size_t>(std::min(length, kMaxReserve)));
        }
    }
    if (sink->mode == BodySink::Mode::keep) sink->out->append(data, size * n);
    return size * n;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
    std::string_view line(data, size * n);
    constexpr std::string_view key = "retry-after:";
    if (line.size() > key.size()) {
        std::string lower(line.substr(0, key.size()));
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        if (lower == key) *static_cast<std::optional<std::chrono::milliseconds>*>(user) = parse_retry_after(line.substr(key.size()));
    }
    return size * n;
}

curl_blob blob(const std::string& s) {
    return curl_blob{const_cast<char*>(s.data()), s.size(), CURL_BLOB_COPY};
}

}  // namespace

struct HttpClient::Impl {
    const CurlLibrary& lib = curl_library();   // throws when libcurl is not on the node
    CURL* curl = nullptr;
    curl_slist* headers = nullptr;
    std::string base;
    char error[CURL_ERROR_SIZE] = {};
    long connects = 0;

    ~Impl() {
        if (headers) lib.slist_free_all(headers);
        if (curl) lib.easy_cleanup(curl);
    }
};

HttpClient::HttpClient(const KubeConfig& config) : impl_(std::make_unique<Impl>()) {
    const CurlLibrary& lib = impl_->lib;
    const bool tls = config.server.rfind("https://", 0) == 0;
    if (!tls && !config.token.empty()) {
        config_error(config.source + ": refusing to send a bearer token over plain http to " + config.server);
    }
    impl_->curl = lib.easy_init();
    if (!impl_->curl) throw IpamError(codes::io_failure, "cannot initialise libcurl");
    CURL* c = impl_->curl;
    impl_->base = config.server;
    lib.easy_setopt(c, CURLOPT_ERRORBUFFER, impl_->error);
    lib.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    lib.easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    lib.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    lib.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    lib.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    lib.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    if (tls) {
        if (config.insecure_skip_tls_verify) {
            lib.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
            lib.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
        } else if (!config.ca_pem.empty()) {
            curl_blob b = blob(config.ca_pem);
            lib.easy_setopt(c, CURLOPT_CAINFO_BLOB, &b);
        }
        if (!config.client_cert_pem.empty()) {
            curl_blob cert = blob(config.client_cert_pem), key = blob(config.client_key_pem);
            lib.easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
            lib.easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
            lib.easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
            lib.easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
        }
    }
    impl_->headers = lib.slist_append(impl_->headers, "Accept: application/json");
    impl_->headers = lib.slist_append(impl_->headers, "User-Agent: rdmanet-ipam");
    impl_->headers = lib.slist_append(impl_->headers, "Expect:");   // no 100-continue round trip on big PUTs
    if (!config.token.empty()) {
        const std::string auth = "Authorization: Bearer " + config.token;
        impl_->headers = lib.slist_append(impl_->headers, auth.c_str());
    }
}

HttpClient::~HttpClient() = default;

long HttpClient::connections() const { return impl_->connects; }

HttpResponse HttpClient::send(std::string_view method, const std::string& path, const std::string& body,
                              std::string_view content_type, std::chrono::milliseconds timeout,
                              const RequestOptions& options) {
    const CurlLibrary& lib = impl_->lib;
    CURL* c = impl_->curl;
    HttpResponse r;
    const std::string url = impl_->base + path;
    curl_slist* headers = impl_->headers;
    curl_slist* extra = nullptr;
    std::string ct, accept;
    const std::string m(method);
    lib.easy_setopt(c, CURLOPT_URL, url.c_str());
    lib.easy_setopt(c, CURLOPT_HTTPGET, 1L);   // reset any body of the previous request
    bool with_body = false;
    if (m == "GET") {
        lib.easy_setopt(c, CURLOPT_CUSTOMREQUEST, nullptr);
    } else if (m == "DELETE" && body.empty()) {
        lib.easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
    } else {
        lib.easy_setopt(c, CURLOPT_POST, 1L);
        lib.easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
        lib.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
        lib.easy_setopt(c, CURLOPT_CUSTOMREQUEST, m == "POST" ? nullptr : m.c_str());
        with_body = true;
    }
    if (with_body || !options.accept.empty()) {
        // The connection's headers with this request's Content-Type and Accept.
        for (curl_slist* h = impl_->headers; h; h = h->next) {
            const bool is_accept = std::string_view(h->data).starts_with("Accept:");
            if (!(is_accept && !options.accept.empty())) extra = lib.slist_append(extra, h->data);
        }
        if (!options.accept.empty()) {
            accept = "Accept: " + std::string(options.accept);
            extra = lib.slist_append(extra, accept.c_str());
        }
        if (with_body) {
            ct = "Content-Type: " + std::string(content_type);
            extra = lib.slist_append(extra, ct.c_str());
        }
        headers = extra;
    }
    lib.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    const long total = std::max<long>(1, static_cast<long>(timeout.count()));
    lib.easy_setopt(c, CURLOPT_TIMEOUT_MS, total);
    lib.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min<long>(total, 10000));
    BodySink sink{&lib, c, &r.body, options.discard_success_body};
    lib.easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    lib.easy_setopt(c, CURLOPT_HEADERDATA, &r.retry_after);
    impl_->error[0] = '\0';
    const CURLcode rc = lib.easy_perform(c);
    long connects = 0;
    lib.easy_getinfo(c, CURLINFO_NUM_CONNECTS, &connects);
    impl_->connects += connects;
    lib.easy_setopt(c, CURLOPT_HTTPHEADER, impl_->headers);
    if (extra) lib.slist_free_all(extra);
    if (rc != CURLE_OK) {
        const std::string detail = impl_->error[0] ? impl_->error : lib.easy_strerror(rc);
        const bool tls = rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
                         rc == CURLE_SSL_CERTPROBLEM;
        throw TransportError(rc, retryable_curl(rc), tls, detail);
    }
    lib.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    return r;
}

}  // namespace rdmanet::ipam::kube
