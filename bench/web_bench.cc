// File: web_bench.cc
// The run page of a run with N SUCCEEDED steps, each a 3-dataset suite job
// with intervals, 15 positions and S per-sample summaries per dataset
// (what the bootstrap and paired comparisons keep), two ways (issue 29):
//  - http: the records written into a SQLite store (results.sqlite3), a real
//    dflash-evald started on it with --http-listen, then R GETs of
//    /runs/bench, each on a new connection: store read + render + HTTP;
//  - render: web/views.h RunView on the same records in memory.
// Prints the median (and slowest) milliseconds per page and the page size,
// and how long the store read and its JSON parsing take alone.
//   web_bench [steps=200] [repeats=21] [samples=64] [dflash-evald=../server/dflash-evald]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "store/record_json.h"
#include "store/sqlite_result_store.h"
#include "web/views.h"

namespace {

namespace fs = std::filesystem;
using dflash::types::EvalResult;

EvalResult Dataset(double accept, int samples) {
  EvalResult r;
  r.accept_length_pooled = accept;
  r.tau = accept - 0.1;
  r.accept_length_ci = dflash::types::Interval{accept - 0.2, accept + 0.2};
  r.tau_ci = r.accept_length_ci;
  r.samples = samples;
  for (int k = 1; k <= 15; ++k) {
    dflash::types::PositionMetrics p;
    p.position = k;
    p.counted = 1000;
    p.acceptance = 0.9 / k;
    p.acceptance_ci = dflash::types::Interval{p.acceptance - 0.01, p.acceptance + 0.01};
    r.positions.push_back(p);
  }
  for (int s = 0; s < samples; ++s) {
    dflash::types::SampleSummary sum;
    sum.sample_index = s;
    sum.blocks = 40;
    sum.mean_accept_length = accept;
    sum.counted = sum.correct = sum.accepted = sum.conditional_counted =
        std::vector<int64_t>(15, 40);
    r.per_sample.push_back(sum);
  }
  return r;
}

dflash::types::JobRecord Step(int64_t step, int samples) {
  dflash::types::JobRecord j;
  j.id = "ev-bench-" + std::to_string(1000000 + step);
  j.request.run = "bench";
  j.request.step = step;
  j.request.params.dataset = "a,b,c";
  j.state = dflash::types::JobState::kSucceeded;
  j.create_unix_micros = j.end_unix_micros = 1700000000000000 + step;
  EvalResult r = Dataset(3 + 0.001 * step, 0);
  r.suite = "a,b,c";
  for (const char* d : {"a", "b", "c"}) r.suite_results.push_back({d, Dataset(3, samples)});
  j.result = r;
  return j;
}

struct Timing {
  double median_ms = 0, max_ms = 0;
  size_t bytes = 0;
};

// Runs `once` `repeats` times; it returns the page size, 0 on failure.
Timing Measure(int repeats, const std::function<size_t()>& once) {
  std::vector<double> ms;
  Timing t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    t.bytes = once();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (t.bytes == 0) std::exit(1);
  }
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2];
  t.max_ms = ms.back();
  return t;
}

// dflash-evald on `state` with the web view on a free loopback port.
pid_t StartServer(const std::string& evald, const std::string& state, int* http_port) {
  const std::string port_file = state + "/http.port";
  const pid_t pid = fork();
  if (pid == 0) {
    std::freopen((state + "/server.log").c_str(), "w", stdout);
    std::freopen((state + "/server.log").c_str(), "a", stderr);
    execl(evald.c_str(), evald.c_str(), "--listen", "127.0.0.1:0", "--state-dir", state.c_str(),
          "--http-listen", "127.0.0.1:0", "--http-port-file", port_file.c_str(), nullptr);
    _exit(127);
  }
  for (int i = 0; i < 600 && *http_port <= 0; ++i) {  // up to a minute (libtorch's start)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(port_file);
    in >> *http_port;
    if (waitpid(pid, nullptr, WNOHANG) == pid) break;
  }
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 21;
  const int samples = argc > 3 ? std::atoi(argv[3]) : 64;
  const std::string evald =
      argc > 4 ? argv[4]
               : (fs::path(argv[0]).parent_path() / ".." / "server" / "dflash-evald").string();
  std::vector<dflash::types::JobRecord> jobs;
  for (int s = 1; s <= steps; ++s) jobs.push_back(Step(s * 100, samples));

  const std::string state =
      (fs::temp_directory_path() / ("web_bench." + std::to_string(getpid()))).string();
  fs::create_directories(state);
  {
    auto store = dflash::store::SqliteResultStore::Open(state + "/results.sqlite3");
    if (!store.ok()) return std::fprintf(stderr, "%s\n", store.status().ToString().c_str()), 1;
    for (const auto& j : jobs) {
      if (absl::Status s = (*store)->Put(j); !s.ok()) return 1;
    }
  }
  int port = 0;
  const pid_t server = StartServer(evald, state, &port);
  if (port <= 0) {
    std::fprintf(stderr, "web_bench: %s did not start (see %s/server.log)\n", evald.c_str(),
                 state.c_str());
    return 1;
  }
  const Timing http = Measure(repeats, [port] {
    httplib::Client client("127.0.0.1", port);  // a new connection per page
    auto res = client.Get("/runs/bench");
    return res && res->status == 200 ? res->body.size() : size_t{0};
  });
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);
  auto store = dflash::store::SqliteResultStore::Open(state + "/results.sqlite3");
  if (!store.ok()) return 1;
  // The run as the page lists it (per-sample summaries emptied in SQL), and
  // whole, as a client's `history` reads it.
  const auto list = [&store](bool without_per_sample) {
    dflash::types::ListQuery q;
    q.run = "bench";
    q.order_by_step = true;
    q.page_size = 1000;
    q.without_per_sample = without_per_sample;
    auto page = (*store)->List(q);
    return page.ok() ? page->jobs.size() : size_t{0};
  };
  const Timing read = Measure(repeats, [&list] { return list(true); });
  const Timing read_whole = Measure(repeats, [&list] { return list(false); });
  const std::string text = dflash::store::RecordToJson(jobs.back());
  const Timing parse = Measure(repeats, [&text, steps] {
    size_t n = 0;
    for (int k = 0; k < steps; ++k) n += dflash::store::RecordFromJson(text).ok() ? 1 : 0;
    return n;
  });
  store->reset();
  if (!std::getenv("WEB_BENCH_KEEP")) fs::remove_all(state);

  const Timing render = Measure(
      repeats, [&jobs] { return dflash::web::RunView("bench", jobs, std::nullopt).html.size(); });
  std::printf(
      "run page, %d steps x (suite of 3 + macro mean, %d samples each), records of %zu bytes, "
      "%d repeats:\n"
      "  http (SQLite read + render + HTTP, real dflash-evald): median %.2f ms, slowest %.2f ms, "
      "%zu bytes\n"
      "  render only (records in memory):                      median %.2f ms, slowest %.2f ms\n"
      "  store read only (List of the run, as the page does):  median %.2f ms\n"
      "  store read of the whole records (per-sample kept):    median %.2f ms\n"
      "  record JSON parsing of the whole records:             median %.2f ms\n"
      "budget 200 ms: the full request takes %.0f%% of it\n",
      steps, samples, dflash::store::RecordToJson(jobs.back()).size(), repeats, http.median_ms,
      http.max_ms, http.bytes, render.median_ms, render.max_ms, read.median_ms,
      read_whole.median_ms, parse.median_ms, 100.0 * http.median_ms / 200.0);
  return 0;
}
