// File: http_exposer.h
// A minimal HTTP/1.1 server for Prometheus scrapes: GET /metrics answers
// with `render()`, anything else 404. One thread, one request at a time
// (scrapes are rare and small). Not prometheus::Exposer: its civetweb starts
// threads with a 100 KiB stack, which glibc refuses once libtorch's static
// TLS is loaded (pthread_create -> EINVAL).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace dflash::metrics {

class HttpExposer {
 public:
  using RenderFn = std::function<std::string()>;

  // Binds HOST:PORT (IPv4 address or "localhost"; port 0 picks a free one)
  // and starts serving.
  static absl::StatusOr<std::unique_ptr<HttpExposer>> Start(const std::string& listen,
                                                            RenderFn render);
  ~HttpExposer();  // stops the thread

  int port() const { return port_; }

 private:
  HttpExposer(int fd, int port, RenderFn render);
  void Serve();
  void Handle(int client);

  int fd_;
  int port_;
  int wake_[2] = {-1, -1};  // a pipe that ends the poll loop
  RenderFn render_;
  std::thread thread_;
};

}  // namespace dflash::metrics
