// test_apiserver: an in-repo stand-in for the kube-apiserver, for rdmanet's Kubernetes datastore
// tests and benchmark. HTTP routing, bearer-token auth, TLS, discovery and fault injection here;
// object semantics in resource_store.cpp.
//
//   test_apiserver --port-file F [--cert C --key K] [--token T]... [--forbidden-token T] [--no-crds]
//                  [--latency-ms N] [--error-rate P] [--conflict-rate P] [--throttle-rate P]
//                  [--retry-after S] [--drop-rate P] [--drop-after-rate P] [--seed N]
//
// Binds 127.0.0.1 on a free port and writes the port to F once it accepts connections. Stops on
// SIGTERM/SIGINT. Faults apply to API requests only, not to the control endpoints:
//   GET  /_test/stats   {"requests":N,"by_method":{..},"bytes_by_method":{..},"largest_object":B,
//                        "outage":"off","faults":{..},"revision":R}
//        bytes_by_method: request body bytes received per HTTP method (what clients wrote);
//        largest_object: serialized size of the largest object ever stored.
//   POST /_test/faults  {"latency_ms":..,"error_rate":..,...}  (any subset; replaces those values)
//   POST /_test/outage  {"mode":"drop"|"hang"|"off"}: an API-server outage with the state kept.
//        drop: every API request's connection is closed without an answer (what a client sees
//        from a server that is restarting behind a load balancer); hang: requests are held
//        unanswered until the outage ends and then dropped unapplied (a wedged server; clients
//        run into their timeouts). off: normal service again, objects as they were.
//        Misbehaving answers to every API request, objects untouched: "endless" (200 whose
//        chunked JSON body never ends, until the client hangs up), "trickle" (200 whose body
//        comes one byte per 200 ms, for at most 60 s), "unauthorized" (401), "forbidden" (403).
//   Faults on one resource or group (in /_test/faults too): "fail_resource": PLURAL answers every
//   API request on that resource (list included) with "fail_status" (default 503) while the rest
//   of the server works; "unserved_group": GROUP makes the server behave as one that does not
//   serve GROUP (missing from /apis, 404 on /apis/GROUP and below). "" turns either off.
// --forbidden-token: a token that authenticates an identity RBAC grants nothing (user
// "system:serviceaccount:rdmanet-system:forbidden"): discovery is served, every API request is
// answered 403 Forbidden as the kube-apiserver words it.
// Rates are probabilities per request: error -> 500, conflict -> 409 Conflict on writes,
// throttle -> 429 with Retry-After, drop -> connection closed before handling, drop-after ->
// the request is applied and then the connection closed without a response (the lost-answer case).
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "resource_store.hpp"

namespace {

using apiserver::json;
using apiserver::Reply;

struct Faults {
    int latency_ms = 0;
    double error_rate = 0, conflict_rate = 0, throttle_rate = 0, drop_rate = 0, drop_after_rate = 0;
    int retry_after_s = 1;
    std::string fail_resource, unserved_group;
    int fail_status = 503;
    json to_json() const {
        return {{"latency_ms", latency_ms},       {"error_rate", error_rate},
                {"conflict_rate", conflict_rate}, {"throttle_rate", throttle_rate},
                {"drop_rate", drop_rate},         {"drop_after_rate", drop_after_rate},
                {"retry_after", retry_after_s},   {"fail_resource", fail_resource},
                {"fail_status", fail_status},     {"unserved_group", unserved_group}};
    }
    void apply(const json& j) {
        latency_ms = j.value("latency_ms", latency_ms);
        error_rate = j.value("error_rate", error_rate);
        conflict_rate = j.value("conflict_rate", conflict_rate);
        throttle_rate = j.value("throttle_rate", throttle_rate);
        drop_rate = j.value("drop_rate", drop_rate);
        drop_after_rate = j.value("drop_after_rate", drop_after_rate);
        retry_after_s = j.value("retry_after", retry_after_s);
        fail_resource = j.value("fail_resource", fail_resource);
        fail_status = j.value("fail_status", fail_status);
        unserved_group = j.value("unserved_group", unserved_group);
    }
};

struct Server {
    apiserver::ResourceStore store;
    std::vector<std::string> tokens;
    std::string forbidden_token;
    std::mutex mu;
    Faults faults;
    std::mt19937_64 rng;
    std::atomic<std::uint64_t> requests{0};
    std::map<std::string, std::uint64_t> by_method;
    std::map<std::string, std::uint64_t> bytes_by_method;
    std::string outage = "off";  // "off", "drop" or "hang" (see the header)
    std::condition_variable outage_over;
    std::map<std::string, std::uint64_t> injected;
    int port = 0;

    Server(bool crds, std::uint64_t seed) : store(crds), rng(seed) {}

    Faults current() {
        std::lock_guard lock(mu);
        return faults;
    }
    bool roll(double p, const char* what) {
        if (p <= 0) return false;
        std::lock_guard lock(mu);
        const bool hit = std::uniform_real_distribution<double>(0, 1)(rng) < p;
        if (hit) ++injected[what];
        return hit;
    }
};

std::unique_ptr<httplib::Server> g_server;

void send(httplib::Response& res, const Reply& r) {
    res.status = r.status;
    if (r.text) {
        // Sent from the stored text itself (a pool is ~700 kB at 10k entries): no copy per GET.
        std::shared_ptr<const std::string> text = r.text;
        res.set_content_provider(text->size(), "application/json",
                                 [text](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                                     return sink.write(text->data() + offset, length);
                                 });
    } else {
        res.set_content(r.body.dump(), "application/json");
    }
}

// Closes the TCP connection a request arrived on (httplib does not expose it): the socket whose
// peer is the request's remote address and port.
void drop_connection(const httplib::Request& req) {
    DIR* d = opendir("/proc/self/fd");
    if (!d) return;
    while (dirent* e = readdir(d)) {
        const int fd = std::atoi(e->d_name);
        if (fd <= 2) continue;
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0 || ss.ss_family != AF_INET) continue;
        auto* in = reinterpret_cast<sockaddr_in*>(&ss);
        char addr[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &in->sin_addr, addr, sizeof addr);
        if (ntohs(in->sin_port) == req.remote_port && req.remote_addr == addr) {
            ::shutdown(fd, SHUT_RDWR);
            break;
        }
    }
    closedir(d);
}

// cpp-httplib listens with a backlog of 5 (compiled into Debian's library): 16 callers that each
// open a new connection per CNI call overflow it, and a dropped SYN costs a 1 s retransmission -
// a stall of the test double, not of the client. Go's net package (the kube-apiserver) listens
// with net.core.somaxconn; listen() again on the listening socket raises the backlog in place.
void widen_listen_backlog(int port) {
    DIR* d = opendir("/proc/self/fd");
    if (!d) return;
    while (dirent* e = readdir(d)) {
        const int fd = std::atoi(e->d_name);
        if (fd <= 2) continue;
        int listening = 0;
        socklen_t optlen = sizeof listening;
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) != 0 || !listening) continue;
        if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0 || ss.ss_family != AF_INET) continue;
        if (ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port) == port) ::listen(fd, SOMAXCONN);
    }
    closedir(d);
}

json discovery_resources(const apiserver::ResourceStore& store, const std::string& group, const std::string& version) {
    json resources = json::array();
    for (const auto& t : store.types()) {
        if (t.group != group || t.version != version) continue;
        json r = {{"name", t.plural},
                  {"singularName", t.singular},
                  {"namespaced", t.namespaced},
                  {"kind", t.kind},
                  {"verbs", {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}}};
        if (!t.short_name.empty()) r["shortNames"] = {t.short_name};
        resources.push_back(r);
    }
    return {{"kind", "APIResourceList"},
            {"apiVersion", "v1"},
            {"groupVersion", group.empty() ? version : group + "/" + version},
            {"resources", resources}};
}

// Discovery and version: what kubectl reads before it acts.
Reply forbidden(const httplib::Request& req);
bool misbehave(const std::string& mode, httplib::Response& res);

bool serve_discovery(Server& s, const httplib::Request& req, httplib::Response& res) {
    const std::string& p = req.path;
    const std::string unserved = s.current().unserved_group;
    static const std::regex group_re(R"(^/apis/([^/]+)/?$)");
    std::smatch gm;
    if (p == "/version") {
        send(res,
             {200,
              {{"major", "1"}, {"minor", "32"}, {"gitVersion", "v1.32.0-rdmanet-test"}, {"platform", "linux/amd64"}}});
    } else if (p == "/api") {
        send(res, {200,
                   {{"kind", "APIVersions"},
                    {"versions", {"v1"}},
                    {"serverAddressByClientCIDRs",
                     {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1:" + std::to_string(s.port)}}}}}});
    } else if (p == "/apis") {
        json groups = json::array();
        std::set<std::string> seen;
        for (const auto& t : s.store.types()) {
            if (t.group.empty() || t.group == unserved || !seen.insert(t.group).second) continue;
            json v = {{"groupVersion", t.group + "/" + t.version}, {"version", t.version}};
            groups.push_back({{"name", t.group}, {"versions", {v}}, {"preferredVersion", v}});
        }
        send(res, {200, {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}}});
    } else if (p == "/api/v1") {
        send(res, {200, discovery_resources(s.store, "", "v1")});
    } else if (std::regex_match(p, gm, group_re)) {
        // One group's APIGroup document (what a client reads to find the served version).
        const std::string group = gm[1];
        json versions = json::array();
        std::set<std::string> seen;
        for (const auto& t : s.store.types())
            if (t.group == group && group != unserved && seen.insert(t.version).second)
                versions.push_back({{"groupVersion", group + "/" + t.version}, {"version", t.version}});
        if (versions.empty()) {
            send(res,
                 {404, apiserver::status_object(404, "NotFound", "the server could not find the requested resource")});
        } else {
            send(res, {200,
                       {{"kind", "APIGroup"},
                        {"apiVersion", "v1"},
                        {"name", group},
                        {"versions", versions},
                        {"preferredVersion", versions[0]}}});
        }
    } else {
        static const std::regex gv(R"(^/apis/([^/]+)/([^/]+)/?$)");
        std::smatch m;
        if (!std::regex_match(p, m, gv)) return false;
        json list = m[1] == unserved ? json{{"resources", json::array()}} : discovery_resources(s.store, m[1], m[2]);
        if (list["resources"].empty()) {
            send(res,
                 {404, apiserver::status_object(404, "NotFound", "the server could not find the requested resource")});
        } else {
            send(res, {200, list});
        }
    }
    return true;
}

std::string trimmed(std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return std::string(v);
}

// The kube-apiserver's content negotiation, for what clients of this server send: the first media
// range of Accept that is JSON (application/json, application/*, */*) and that the server can
// produce decides. With as=PartialObjectMetadata;g=meta.k8s.io;v=v1 (client-go's metadata
// client; rdmanet's pool PATCH) a single object is answered with its metadata only; other
// transforms (kubectl's as=Table) are skipped as ranges this server cannot produce. Nothing
// acceptable: plain JSON (where the real server would answer 406).
apiserver::Output negotiate_output(const std::string& accept) {
    std::size_t start = 0;
    while (start <= accept.size()) {
        std::size_t end = accept.find(',', start);
        if (end == std::string::npos) end = accept.size();
        const std::string range = accept.substr(start, end - start);
        start = end + 1;
        std::map<std::string, std::string> params;
        std::size_t semi = range.find(';');
        const std::string type = trimmed(std::string_view(range).substr(0, semi));
        while (semi != std::string::npos) {
            const std::size_t next = range.find(';', semi + 1);
            const std::string param =
                range.substr(semi + 1, next == std::string::npos ? std::string::npos : next - semi - 1);
            const std::size_t eq = param.find('=');
            if (eq != std::string::npos)
                params[trimmed(std::string_view(param).substr(0, eq))] =
                    trimmed(std::string_view(param).substr(eq + 1));
            semi = next;
        }
        if (type != "application/json" && type != "application/*" && type != "*/*") continue;
        if (params.count("q") && params["q"] == "0") continue;
        auto as = params.find("as");
        if (as == params.end()) return apiserver::Output::object;
        if (as->second == "PartialObjectMetadata" && params["g"] == "meta.k8s.io" &&
            (params["v"] == "v1" || params["v"] == "v1beta1")) {
            return apiserver::Output::metadata;
        }
    }
    return apiserver::Output::object;
}

void serve_api(Server& s, const httplib::Request& req, httplib::Response& res) {
    // /api/v1[/namespaces/NS]/PLURAL[/NAME]  or  /apis/G/V[/namespaces/NS]/PLURAL[/NAME]
    static const std::regex path_re(
        R"(^/(?:api/(v1)|apis/([^/]+)/([^/]+))(?:/namespaces/([^/]+))?/([^/]+)(?:/([^/]+)(/status)?)?/?$)");
    std::smatch m;
    const std::string path = req.path;
    if (!std::regex_match(path, m, path_re)) {
        send(res, {404, apiserver::status_object(404, "NotFound", "the server could not find the requested resource")});
        return;
    }
    const std::string group = m[1].matched ? "" : m[2].str();
    const std::string version = m[1].matched ? "v1" : m[3].str();
    const std::string ns = m[4].str(), plural = m[5].str(), name = m[6].str();
    const bool status_subresource = m[7].matched;
    const apiserver::ResourceType* t = s.store.find_type(group, version, plural);
    if (!t || (!group.empty() && group == s.current().unserved_group)) {
        send(res, {404, apiserver::status_object(404, "NotFound", "the server could not find the requested resource")});
        return;
    }
    // A namespaced resource needs its namespace except to be listed across all of them; a
    // cluster-scoped one (namespaces, nodes) has no namespace in its path.
    if ((ns.empty() && !(req.method == "GET" && name.empty()) && t->namespaced) || (!ns.empty() && !t->namespaced)) {
        send(res, {404, apiserver::status_object(404, "NotFound", "the server could not find the requested resource")});
        return;
    }
    if (const Faults faults = s.current(); !faults.fail_resource.empty() && faults.fail_resource == plural) {
        {
            std::lock_guard lock(s.mu);
            ++s.injected["fail_resource"];
        }
        const bool internal = faults.fail_status == 500;
        send(res,
             {faults.fail_status,
              apiserver::status_object(faults.fail_status, internal ? "InternalError" : "ServiceUnavailable",
                                       internal ? "Internal error occurred: injected"
                                                : "the server is currently unable to handle the request (injected)")});
        return;
    }
    const bool write = req.method != "GET";
    if (write && s.roll(s.current().conflict_rate, "conflict")) {
        send(res,
             {409, apiserver::status_object(409, "Conflict",
                                            "Operation cannot be fulfilled on " + plural + " \"" + name +
                                                "\": the object has been modified (injected)",
                                            {{"name", name.empty() ? std::string("x") : name}, {"kind", plural}})});
        return;
    }
    json body;
    if (!req.body.empty()) {
        body = json::parse(req.body, nullptr, false);
        if (body.is_discarded()) {
            send(res, {400, apiserver::status_object(400, "BadRequest", "the request body is not JSON")});
            return;
        }
    }
    Reply r;
    const apiserver::Output out = negotiate_output(req.get_header_value("Accept"));
    if (req.method == "GET") {
        r = name.empty() ? s.store.list(*t, ns, req.get_param_value("fieldSelector")) : s.store.get(*t, ns, name, out);
    } else if (req.method == "POST" && name.empty()) {
        r = s.store.create(*t, ns, body, out);
    } else if (req.method == "PUT" && !name.empty()) {
        r = s.store.update(*t, ns, name, body, out, status_subresource);
    } else if (req.method == "PATCH" && !name.empty()) {
        r = s.store.patch(*t, ns, name, req.get_header_value("Content-Type"), body, out);
    } else if (req.method == "DELETE" && !name.empty()) {
        r = s.store.remove(*t, ns, name, body);
    } else {
        r = {405, apiserver::status_object(405, "MethodNotAllowed",
                                           "the server does not allow this method on the requested resource")};
    }
    if (write && r.status < 300 && s.roll(s.current().drop_after_rate, "drop_after")) {
        drop_connection(req);
        return;
    }
    send(res, r);
}

void handle(Server& s, const httplib::Request& req, httplib::Response& res) {
    if (req.path.rfind("/_test/", 0) == 0) {
        if (req.path == "/_test/stats") {
            std::lock_guard lock(s.mu);
            send(res, {200,
                       {{"requests", s.requests.load()},
                        {"by_method", s.by_method},
                        {"bytes_by_method", s.bytes_by_method},
                        {"largest_object", s.store.largest_object()},
                        {"outage", s.outage},
                        {"injected", s.injected},
                        {"faults", s.faults.to_json()},
                        {"revision", s.store.revision()}}});
        } else if (req.path == "/_test/outage" && req.method == "POST") {
            json j = json::parse(req.body, nullptr, false);
            const std::string mode = j.is_object() ? j.value("mode", "") : "";
            static const std::set<std::string> modes{"off",     "drop",         "hang",     "endless",
                                                     "trickle", "unauthorized", "forbidden"};
            if (!modes.count(mode)) {
                send(res, {400, apiserver::status_object(
                                    400, "BadRequest",
                                    "mode must be off, drop, hang, endless, trickle, unauthorized or forbidden")});
                return;
            }
            {
                std::lock_guard lock(s.mu);
                s.outage = mode;
            }
            s.outage_over.notify_all();
            send(res, {200, {{"outage", mode}}});
        } else if (req.path == "/_test/faults" && req.method == "POST") {
            json j = json::parse(req.body, nullptr, false);
            std::lock_guard lock(s.mu);
            if (j.is_object()) s.faults.apply(j);
            send(res, {200, s.faults.to_json()});
        } else {
            send(res, {404, apiserver::status_object(404, "NotFound", "no such test endpoint")});
        }
        return;
    }
    ++s.requests;
    {
        std::unique_lock lock(s.mu);
        ++s.by_method[req.method];
        s.bytes_by_method[req.method] += req.body.size();
        const bool held = s.outage == "hang";
        // At most 30 s: a held request occupies one of the server's worker threads.
        if (held) s.outage_over.wait_for(lock, std::chrono::seconds(30), [&] { return s.outage != "hang"; });
        if (const std::string mode = s.outage; !held && misbehave(mode, res)) return;
        if (s.outage != "off" || held) {
            lock.unlock();
            drop_connection(req);
            return;
        }
    }
    if (!s.tokens.empty()) {
        const std::string auth = req.get_header_value("Authorization");
        bool ok = false;
        for (const auto& t : s.tokens) ok = ok || auth == "Bearer " + t;
        if (!s.forbidden_token.empty() && auth == "Bearer " + s.forbidden_token) {
            if (req.method == "GET" && serve_discovery(s, req, res)) return;  // system:discovery
            send(res, forbidden(req));
            return;
        }
        if (!ok) {
            send(res, {401, apiserver::status_object(401, "Unauthorized", "Unauthorized")});
            return;
        }
    }
    const Faults f = s.current();
    if (f.latency_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(f.latency_ms));
    if (s.roll(f.drop_rate, "drop")) {
        drop_connection(req);
        return;
    }
    if (s.roll(f.throttle_rate, "throttle")) {
        res.set_header("Retry-After", std::to_string(f.retry_after_s));
        send(res, {429, apiserver::status_object(429, "TooManyRequests",
                                                 "Too many requests, please try again later. (injected)")});
        return;
    }
    if (s.roll(f.error_rate, "error")) {
        send(res, {500, apiserver::status_object(500, "InternalError", "Internal error occurred: injected")});
        return;
    }
    if (req.method == "GET" && serve_discovery(s, req, res)) return;
    if (req.path.rfind("/openapi/", 0) == 0) {
        send(res, {404, apiserver::status_object(404, "NotFound", "the server could not find the requested resource")});
        return;
    }
    serve_api(s, req, res);
}

// The misbehaving answers of /_test/outage (see the header); false for the other modes.
bool misbehave(const std::string& mode, httplib::Response& res) {
    if (mode == "unauthorized") {
        send(res, {401, apiserver::status_object(401, "Unauthorized", "Unauthorized")});
    } else if (mode == "forbidden") {
        send(res, {403, apiserver::status_object(403, "Forbidden", "forbidden (injected)")});
    } else if (mode == "endless") {
        res.status = 200;
        res.set_chunked_content_provider("application/json", [](std::size_t offset, httplib::DataSink& sink) {
            static const std::string head = "{\"kind\":\"IPPool\",\"padding\":[";
            static const std::string more(64 * 1024, ' ');
            return offset == 0 ? sink.write(head.data(), head.size()) : sink.write(more.data(), more.size());
        });
    } else if (mode == "trickle") {
        res.status = 200;
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        res.set_chunked_content_provider("application/json", [until](std::size_t, httplib::DataSink& sink) {
            if (std::chrono::steady_clock::now() >= until) {
                sink.done();
                return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            return sink.write(" ", 1);
        });
    } else {
        return false;
    }
    return true;
}

// 403 as the kube-apiserver's RBAC authorizer words it for an identity granted nothing.
Reply forbidden(const httplib::Request& req) {
    static const std::regex path(R"re(^/apis?/(?:([^/]+)/)?v[^/]+(?:/namespaces/([^/]+))?/([^/]+)(?:/([^/]+))?$)re");
    std::smatch m;
    std::string group, ns, resource, name;
    if (std::regex_match(req.path, m, path)) {
        group = req.path.rfind("/apis/", 0) == 0 ? m[1].str() : "";
        ns = m[2];
        resource = m[3];
        name = m[4];
    }
    std::string verb = req.method == "GET"      ? (name.empty() ? "list" : "get")
                       : req.method == "POST"   ? "create"
                       : req.method == "PUT"    ? "update"
                       : req.method == "PATCH"  ? "patch"
                       : req.method == "DELETE" ? "delete"
                                                : "access";
    const std::string subject =
        resource + (group.empty() ? "" : "." + group) + (name.empty() ? "" : " \"" + name + "\"");
    std::string message = subject + " is forbidden: User \"system:serviceaccount:rdmanet-system:forbidden\" cannot " +
                          verb + " resource \"" + resource + "\" in API group \"" + group + "\"" +
                          (ns.empty() ? " at the cluster scope" : " in the namespace \"" + ns + "\"");
    json details = {{"kind", resource}};
    if (!group.empty()) details["group"] = group;
    if (!name.empty()) details["name"] = name;
    return {403, apiserver::status_object(403, "Forbidden", message, details)};
}

double rate(const char* text) { return std::strtod(text, nullptr); }

}  // namespace

int main(int argc, char** argv) {
    std::string port_file, cert, key;
    bool crds = true;
    std::uint64_t seed = std::random_device{}();
    Faults faults;
    std::vector<std::string> tokens;
    std::string forbidden_token;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) {
                std::cerr << "test_apiserver: " << a << " needs a value\n";
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--port-file")
            port_file = next();
        else if (a == "--cert")
            cert = next();
        else if (a == "--key")
            key = next();
        else if (a == "--token")
            tokens.push_back(next());
        else if (a == "--no-crds")
            crds = false;
        else if (a == "--forbidden-token")
            forbidden_token = next();
        else if (a == "--latency-ms")
            faults.latency_ms = std::atoi(next());
        else if (a == "--error-rate")
            faults.error_rate = rate(next());
        else if (a == "--conflict-rate")
            faults.conflict_rate = rate(next());
        else if (a == "--throttle-rate")
            faults.throttle_rate = rate(next());
        else if (a == "--retry-after")
            faults.retry_after_s = std::atoi(next());
        else if (a == "--drop-rate")
            faults.drop_rate = rate(next());
        else if (a == "--drop-after-rate")
            faults.drop_after_rate = rate(next());
        else if (a == "--seed")
            seed = std::strtoull(next(), nullptr, 10);
        else {
            std::cerr << "test_apiserver: unknown argument " << a << '\n';
            return 2;
        }
    }
    if (port_file.empty()) {
        std::cerr << "test_apiserver: --port-file is required\n";
        return 2;
    }
    // SIGTERM/SIGINT stop the server from a thread of our own (not from a signal handler).
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    Server s(crds, seed);
    s.tokens = tokens;
    s.forbidden_token = forbidden_token;
    s.faults = faults;
    if (!cert.empty()) {
        g_server = std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str());
        if (!g_server->is_valid()) {
            std::cerr << "test_apiserver: cannot load --cert/--key\n";
            return 1;
        }
    } else {
        g_server = std::make_unique<httplib::Server>();
    }
    auto& svr = *g_server;
    // Enough workers for every keep-alive connection of the concurrent tests (16 callers and
    // kubectl), and keep-alive without a request limit: clients reuse one connection.
    svr.new_task_queue = [] { return new httplib::ThreadPool(96); };
    svr.set_keep_alive_max_count(1000000);
    svr.set_keep_alive_timeout(30);
    svr.set_payload_max_length(64 << 20);
    // httplib writes a response's headers and body separately: without TCP_NODELAY, Nagle holds the
    // body back until the client's delayed ACK (40 ms) - per request, which would swamp the injected
    // latency. The kube-apiserver (Go) sets TCP_NODELAY on every connection.
    svr.set_tcp_nodelay(true);
    auto h = [&s](const httplib::Request& req, httplib::Response& res) { handle(s, req, res); };
    svr.Get(".*", h);
    svr.Post(".*", h);
    svr.Put(".*", h);
    svr.Patch(".*", h);
    svr.Delete(".*", h);

    s.port = svr.bind_to_any_port("127.0.0.1");
    if (s.port <= 0) {
        std::cerr << "test_apiserver: cannot bind 127.0.0.1\n";
        return 1;
    }
    widen_listen_backlog(s.port);
    {
        const std::string tmp = port_file + ".tmp";
        std::ofstream(tmp) << s.port << '\n';
        std::rename(tmp.c_str(), port_file.c_str());  // readers see the whole number or nothing
    }
    std::thread stopper([&] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        {
            std::lock_guard lock(s.mu);
            s.outage = "drop";  // releases held requests without applying them
        }
        s.outage_over.notify_all();
        svr.stop();
    });
    svr.listen_after_bind();
    kill(getpid(), SIGTERM);  // wakes the stopper if listening ended for another reason
    stopper.join();
    return 0;
}
