// ChunkedCopy (chunked_copy.h): exact conversion for any chunk size, the
// stored bytes seen in order (so the streamed hash equals the whole-range
// hash), and a bf16 target loaded as fp32 peaking within 1.25x of what stays
// resident (issue 14 item 4), measured by VmHWM reset through clear_refs.
#include "weights/chunked_copy.h"

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "weights/fingerprint.h"
#include "weights/target_tensors.h"

namespace dflash::weights {
namespace {

using ::dflash::testing::TempDir;

class ChunkedCopyTest : public ::testing::Test {};

TEST_F(ChunkedCopyTest, ConvertsExactlyForAnyChunkSize) {
  const at::Tensor src = at::randn({37, 53}).to(at::kBFloat16);  // 1961 elements, odd
  const at::Tensor want = src.to(at::kFloat);
  for (int64_t chunk : {int64_t{1}, int64_t{64}, int64_t{100}, int64_t{1000}, int64_t{1} << 20}) {
    std::vector<int64_t> seen, released;
    int64_t next = 0;
    ChunkedCopyOptions o{at::kFloat};
    o.chunk_bytes = chunk;
    absl::StatusOr<at::Tensor> got = ChunkedCopy(
        src, o,
        [&](const void* p, int64_t off, int64_t n) {
          EXPECT_EQ(off, next) << "chunk " << chunk;
          EXPECT_EQ(p, static_cast<const char*>(src.data_ptr()) + off);
          if (off + n < src.nbytes()) EXPECT_EQ(n % 64, 0) << "chunk " << chunk;
          next = off + n;
          seen.push_back(n);
        },
        [&](int64_t off, int64_t n) { released.push_back(off + n); });
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(next, src.nbytes());
    EXPECT_EQ(released.back(), src.nbytes());
    EXPECT_EQ(got->sizes(), src.sizes());
    EXPECT_EQ(got->scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(*got, want)) << "chunk " << chunk;
    EXPECT_NE(got->data_ptr(), src.data_ptr());
  }
}

TEST_F(ChunkedCopyTest, SameDtypeCopyOwnsItsMemory) {
  const at::Tensor src = at::arange(1000, at::kFloat);
  ChunkedCopyOptions o{at::kFloat};
  o.chunk_bytes = 256;
  absl::StatusOr<at::Tensor> got = ChunkedCopy(src, o, nullptr, nullptr);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(at::equal(*got, src));
  EXPECT_NE(got->data_ptr(), src.data_ptr());
}

TEST_F(ChunkedCopyTest, NonContiguousSourceIsAnInternalError) {
  const at::Tensor src = at::zeros({4, 6}).t();
  absl::StatusOr<at::Tensor> got =
      ChunkedCopy(src, ChunkedCopyOptions{at::kFloat}, nullptr, nullptr);
  EXPECT_THAT(got.status(), ::dflash::testing::StatusIs(
                                absl::StatusCode::kInternal,
                                "ChunkedCopy: the source must be a contiguous CPU tensor"));
}

TEST_F(ChunkedCopyTest, StreamedHashEqualsWholeHash) {
  std::vector<unsigned char> b(64 * 5 + 13);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<unsigned char>(i * 31 + 7);
  ByteHasher h(42);
  h.Update(b.data(), 128);
  h.Update(b.data() + 128, 64);
  h.Update(b.data() + 192, b.size() - 192);
  EXPECT_EQ(h.Finish(), HashBytes64(b.data(), b.size(), 42));
}

// /proc/self/status field in bytes.
int64_t ProcStatus(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
  }
  return -1;
}

// A single-file bf16 target written straight to disk (no tensor in memory):
// embed_tokens and lm_head [v, h], each element's bits a function of its index.
void WriteBf16Target(const TempDir& dir, int64_t v, int64_t h, bool tied) {
  const int64_t n = v * h * 2;
  std::string header = "{\"model.embed_tokens.weight\":{\"dtype\":\"BF16\",\"shape\":[" +
                       std::to_string(v) + "," + std::to_string(h) + "],\"data_offsets\":[0," +
                       std::to_string(n) + "]}";
  if (!tied) {
    header += ",\"lm_head.weight\":{\"dtype\":\"BF16\",\"shape\":[" + std::to_string(v) + "," +
              std::to_string(h) + "],\"data_offsets\":[" + std::to_string(n) + "," +
              std::to_string(2 * n) + "]}";
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  std::ofstream out(dir.Join("model.safetensors"), std::ios::binary);
  const uint64_t len = header.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << header;
  std::vector<uint16_t> row(h);
  for (int copies = tied ? 1 : 2; copies > 0; --copies) {
    for (int64_t r = 0; r < v; ++r) {
      // bf16 values in [1, 2): exponent 127, a varying mantissa.
      for (int64_t c = 0; c < h; ++c) row[c] = static_cast<uint16_t>(0x3f80 | ((r + c) & 0x7f));
      out.write(reinterpret_cast<const char*>(row.data()), h * 2);
    }
  }
  dir.WriteFile("config.json", "{\"vocab_size\": " + std::to_string(v) +
                                   ", \"hidden_size\": " + std::to_string(h) +
                                   (tied ? ", \"tie_word_embeddings\": true}" : "}"));
}

// Peak RSS growth of LoadTargetTensors (bf16 file -> fp32) over the bytes it
// keeps. The old load (whole tensor mapped, then converted) peaked at 1.5x
// for a tied target and 1.25x for an untied one.
double LoadPeakRatio(bool tied, int64_t chunk_bytes) {
  TempDir dir;
  const int64_t v = 8192, h = 2048;  // 32 MiB bf16 a tensor, 64 MiB as fp32
  WriteBf16Target(dir, v, h, tied);
  TargetLoadOptions o{at::kFloat};
  o.chunk_bytes = chunk_bytes;
  {  // warm-up: ATen's thread pool and allocator, outside the measurement
    ChunkedCopyOptions w{at::kFloat};
    (void)ChunkedCopy(at::zeros({1 << 16}, at::kBFloat16), w, nullptr, nullptr);
  }
  { std::ofstream("/proc/self/clear_refs") << "5"; }  // VmHWM := VmRSS
  const int64_t before = ProcStatus("VmRSS");
  EXPECT_LE(ProcStatus("VmHWM") - before, int64_t{1} << 20) << "clear_refs did not reset VmHWM";
  absl::StatusOr<TargetTensors> t = LoadTargetTensors(dir.path(), o);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return 1e9;
  const int64_t peak = ProcStatus("VmHWM") - before;
  const int64_t resident = t->embed.nbytes() + (t->tied ? 0 : t->lm_head.nbytes());
  EXPECT_EQ(resident, (tied ? 1 : 2) * v * h * 4);
  EXPECT_EQ(t->embed[5][7].item<float>(),
            at::tensor(1.0f + ((5 + 7) & 0x7f) / 128.0f).item<float>());
  return static_cast<double>(peak) / static_cast<double>(resident);
}

TEST_F(ChunkedCopyTest, Bf16TargetAsFp32PeaksWithinAQuarterOfResident) {
  const double untied = LoadPeakRatio(/*tied=*/false, int64_t{1} << 20);
  const double tied = LoadPeakRatio(/*tied=*/true, int64_t{1} << 20);
  // One chunk as large as the tensor is the old load: the whole bf16 tensor
  // mapped beside its fp32 copy. The measurement must see that.
  const double whole = LoadPeakRatio(/*tied=*/true, int64_t{1} << 40);
  std::cout << "peak RSS growth / resident bytes, 1 MiB chunks: untied " << untied << ", tied "
            << tied << "; one whole-tensor chunk: tied " << whole << "\n";
  EXPECT_LE(untied, 1.25);
  EXPECT_LE(tied, 1.25);
  EXPECT_GT(whole, 1.4);  // 1.5 in theory
}

}  // namespace
}  // namespace dflash::weights
