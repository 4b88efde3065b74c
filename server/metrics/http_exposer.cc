#include "metrics/http_exposer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dflash::metrics {
namespace {

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return;  // the scraper went away
    done += static_cast<size_t>(n);
  }
}

std::string Response(const char* status, const char* type, const std::string& body) {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpExposer>> HttpExposer::Start(const std::string& listen,
                                                                RenderFn render) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", listen, "' is not HOST:PORT"));
  }
  std::string host = listen.substr(0, colon);
  if (host == "localhost") host = "127.0.0.1";
  if (host.empty() || host == "*") host = "0.0.0.0";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", listen, "': host '", host, "' is not an IPv4 address"));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 16) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on '", listen, "': ", why));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return std::unique_ptr<HttpExposer>(new HttpExposer(fd, ntohs(addr.sin_port), std::move(render)));
}

HttpExposer::HttpExposer(int fd, int port, RenderFn render)
    : fd_(fd), port_(port), render_(std::move(render)) {
  if (pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
  thread_ = std::thread([this] { Serve(); });
}

HttpExposer::~HttpExposer() {
  if (wake_[1] >= 0) {
    const char c = 0;
    (void)!write(wake_[1], &c, 1);
  }
  thread_.join();
  close(fd_);
  if (wake_[0] >= 0) close(wake_[0]);
  if (wake_[1] >= 0) close(wake_[1]);
}

void HttpExposer::Serve() {
  while (true) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    const int n = poll(fds, wake_[0] >= 0 ? 2 : 1, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    Handle(client);
    close(client);
  }
}

void HttpExposer::Handle(int client) {
  // A slow or silent client must not hold the endpoint for long.
  timeval timeout{5, 0};
  setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  std::string request;
  char buf[2048];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    const ssize_t n = recv(client, buf, sizeof(buf), 0);
    if (n <= 0) break;
    request.append(buf, static_cast<size_t>(n));
  }
  const size_t line_end = request.find("\r\n");
  const std::string line = request.substr(0, line_end);
  // "GET /metrics HTTP/1.1", possibly with a query string.
  const bool get = line.rfind("GET ", 0) == 0;
  const size_t path_end = line.find_first_of(" ?", 4);
  const std::string path =
      get ? line.substr(4, path_end == std::string::npos ? std::string::npos : path_end - 4) : "";
  if (!get) {
    WriteAll(client, Response("405 Method Not Allowed", "text/plain", "GET only\n"));
  } else if (path != "/metrics") {
    WriteAll(client, Response("404 Not Found", "text/plain", "metrics are at /metrics\n"));
  } else {
    WriteAll(client, Response("200 OK", "text/plain; version=0.0.4; charset=utf-8", render_()));
  }
}

}  // namespace dflash::metrics
