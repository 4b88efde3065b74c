// The worker pool (service/worker_pool.h): tasks run on its threads, as
// many at once as it has threads and in the order posted beyond that;
// destruction waits for the tasks running, drops those not started (and
// what they hold), and refuses posts made while it shuts down. No sleeps:
// every wait is on a condition with a deadline, so a broken pool fails the
// test instead of hanging it.
#include "service/worker_pool.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::service {
namespace {

using ::testing::ElementsAre;

constexpr auto kPoolWait = std::chrono::seconds(10);

// A count several threads change and a test waits on.
class Counter {
 public:
  void Add(int n = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    value_ += n;
    cv_.notify_all();
  }
  int value() {
    std::lock_guard<std::mutex> lock(mu_);
    return value_;
  }
  // False when `kPoolWait` passed before the count reached `n`.
  bool WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kPoolWait, [&] { return value_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int value_ = 0;
};

// A gate tasks wait at until the test opens it.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // False when `kPoolWait` passed first.
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kPoolWait, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(WorkerPoolTest, TasksRunOnThePoolsThreads) {
  Counter done;
  std::mutex mu;
  std::set<std::thread::id> threads;
  {
    WorkerPool pool(2);
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(pool.Post([&] {
        {
          std::lock_guard<std::mutex> lock(mu);
          threads.insert(std::this_thread::get_id());
        }
        done.Add();
      }));
    }
    ASSERT_TRUE(done.WaitFor(20));
  }
  EXPECT_EQ(done.value(), 20);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);  // never on the caller's
  EXPECT_LE(threads.size(), 2u);
}

// Each of N tasks waits until all N have started: only N threads running
// them at once lets any finish.
TEST(WorkerPoolTest, AsManyTasksRunAtOnceAsThePoolHasThreads) {
  constexpr int kThreads = 4;
  Counter started, finished;
  Gate all_started;
  WorkerPool pool(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(pool.Post([&] {
      started.Add();
      if (started.WaitFor(kThreads)) all_started.Open();
      if (all_started.Wait()) finished.Add();
    }));
  }
  ASSERT_TRUE(finished.WaitFor(kThreads)) << started.value() << " of " << kThreads << " started";
}

// One thread: a task waits behind the running one, and tasks run in the
// order posted.
TEST(WorkerPoolTest, ExtraTasksQueueAndRunInTheOrderPosted) {
  Gate release;
  Counter first_running, done;
  std::vector<int> order;  // written by the pool's one thread only
  WorkerPool pool(1);
  ASSERT_TRUE(pool.Post([&] {
    first_running.Add();
    release.Wait();
    order.push_back(0);
    done.Add();
  }));
  ASSERT_TRUE(first_running.WaitFor(1));
  for (int i = 1; i <= 4; ++i) {
    ASSERT_TRUE(pool.Post([&, i] {
      order.push_back(i);
      done.Add();
    }));
  }
  EXPECT_EQ(done.value(), 0);  // all queued behind the first
  release.Open();
  ASSERT_TRUE(done.WaitFor(5));
  EXPECT_THAT(order, ElementsAre(0, 1, 2, 3, 4));
}

// The running task posts until the pool refuses (so destruction has
// begun), then finishes: the destructor waited for it, and every task it
// posted, and the one queued before, was dropped unrun with what it held.
TEST(WorkerPoolTest, DestructionWaitsForTheRunningTaskAndDropsTheQueued) {
  Counter running, ran_queued;
  bool running_finished = false;
  bool refused = false;
  auto held = std::make_shared<int>(7);
  auto pool = std::make_unique<WorkerPool>(1);
  WorkerPool* raw = pool.get();
  ASSERT_TRUE(pool->Post([&, raw] {
    running.Add();
    while (raw->Post([&] { ran_queued.Add(); })) std::this_thread::yield();
    refused = true;
    running_finished = true;
  }));
  ASSERT_TRUE(running.WaitFor(1));
  ASSERT_TRUE(pool->Post([&, held] { ran_queued.Add(*held); }));
  EXPECT_EQ(held.use_count(), 2);  // the queued task holds a copy
  pool.reset();                    // returns only after the running task finished
  EXPECT_TRUE(running_finished);
  EXPECT_TRUE(refused);
  EXPECT_EQ(ran_queued.value(), 0);
  EXPECT_EQ(held.use_count(), 1);  // the dropped task let go of it
}

TEST(WorkerPoolTest, APoolWithoutThreadsQueuesButNeverRuns) {
  Counter ran;
  auto held = std::make_shared<int>(1);
  {
    WorkerPool pool(0);
    EXPECT_TRUE(pool.Post([&, held] { ran.Add(); }));
    EXPECT_EQ(held.use_count(), 2);
  }
  EXPECT_EQ(ran.value(), 0);
  EXPECT_EQ(held.use_count(), 1);
}

}  // namespace
}  // namespace dflash::service
