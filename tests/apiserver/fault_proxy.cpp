// The fault proxy: see fault_proxy.hpp.
#include "fault_proxy.hpp"

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <httplib.h>

namespace apiserver_test {

namespace {

int port_of(const std::string& url) {
    const auto colon = url.rfind(':');
    if (colon == std::string::npos) throw std::runtime_error("no port in " + url);
    return std::stoi(url.substr(colon + 1));
}

json failure_status(int status) {
    const bool internal = status == 500;
    return {
        {"kind", "Status"},
        {"apiVersion", "v1"},
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", internal ? "Internal error occurred: injected by the fault proxy" : "injected by the fault proxy"},
        {"reason", internal ? "InternalError" : "ServiceUnavailable"},
        {"code", status}};
}

}  // namespace

FaultProxy::FaultProxy(const ApiServer& upstream) : upstream_(upstream), upstream_port_(port_of(upstream.url())) {
    make_test_pki(upstream.dir(), "proxy-");
    const std::string dir = upstream.dir();
    server_ =
        std::make_unique<httplib::SSLServer>((dir + "/proxy-server.crt").c_str(), (dir + "/proxy-server.key").c_str());
    if (!server_->is_valid()) throw std::runtime_error("fault proxy: TLS setup failed");
    auto handle = [this](const httplib::Request& req, httplib::Response& res) {
        ++requests_;
        if (const int status = fail_status_; status != 0) {
            res.status = status;
            res.set_content(failure_status(status).dump(), "application/json");
            return;
        }
        httplib::SSLClient cli("127.0.0.1", upstream_port_);
        cli.set_ca_cert_path(upstream_.ca_file().c_str());
        cli.enable_server_certificate_verification(true);
        cli.set_connection_timeout(5);
        cli.set_read_timeout(60);
        httplib::Headers headers;
        for (const char* name : {"Authorization", "Accept"}) {
            if (req.has_header(name)) headers.emplace(name, req.get_header_value(name));
        }
        const std::string type = req.get_header_value("Content-Type");
        auto send = [&]() -> httplib::Result {
            const char* target = req.target.c_str();
            if (req.method == "POST") return cli.Post(target, headers, req.body, type.c_str());
            if (req.method == "PUT") return cli.Put(target, headers, req.body, type.c_str());
            if (req.method == "PATCH") return cli.Patch(target, headers, req.body, type.c_str());
            if (req.method == "DELETE") return cli.Delete(target, headers, req.body, type.c_str());
            return cli.Get(target, headers);
        };
        const httplib::Result r = send();
        if (!r) {
            res.status = 502;
            res.set_content(failure_status(502).dump(), "application/json");
            return;
        }
        res.status = r->status;
        if (r->has_header("Retry-After")) res.set_header("Retry-After", r->get_header_value("Retry-After"));
        const std::string content_type =
            r->has_header("Content-Type") ? r->get_header_value("Content-Type") : "application/json";
        res.set_content(r->body, content_type.c_str());
    };
    server_->Get(".*", handle);
    server_->Post(".*", handle);
    server_->Put(".*", handle);
    server_->Patch(".*", handle);
    server_->Delete(".*", handle);
    port_ = server_->bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("fault proxy: cannot bind 127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_->is_running()) {
        if (std::chrono::steady_clock::now() > give_up) {
            server_->stop();
            thread_.join();
            throw std::runtime_error("fault proxy: not listening after 10 s");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

FaultProxy::~FaultProxy() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
}

std::string FaultProxy::ca_file() const { return upstream_.dir() + "/proxy-ca.crt"; }

std::string FaultProxy::write_kubeconfig(const std::string& name, KubeconfigOptions options) const {
    options.ca_file = ca_file();
    const std::string path = upstream_.write_kubeconfig(name, options);
    std::stringstream text;
    text << std::ifstream(path).rdbuf();
    std::string y = text.str();
    const std::string from = upstream_.url();
    for (auto at = y.find(from); at != std::string::npos; at = y.find(from, at + 1)) y.replace(at, from.size(), url());
    std::ofstream(path) << y;
    return path;
}

}  // namespace apiserver_test
