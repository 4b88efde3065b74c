#include "weights/torch_pt_file.h"

#include "weights/dtype_torch.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "weights/gzip_inflate.h"
#include "weights/pickle_reader.h"

namespace dflash::weights {
namespace {

using caffe2::serialize::PyTorchStreamReader;

constexpr int64_t kMaxPickleBytes = int64_t{1} << 30;
constexpr int64_t kMaxFlattenVisits = int64_t{1} << 22;
constexpr absl::string_view kConvertHint =
    "load it with torch.load and save it again with torch.save(obj, path) "
    "(PyTorch >= 1.6 writes the zip format)";

// Bounds-checked reads over an owned buffer (caffe2's MemoryReadAdapter
// trusts its caller's offsets).
class BufferAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit BufferAdapter(std::shared_ptr<const std::string> data)
      : data_(std::move(data)) {}
  size_t size() const override { return data_->size(); }
  size_t read(uint64_t pos, void* buf, size_t n,
              const char* /*what*/) const override {
    if (pos >= data_->size()) return 0;
    n = std::min<uint64_t>(n, data_->size() - pos);
    std::memcpy(buf, data_->data() + pos, n);
    return n;
  }

 private:
  std::shared_ptr<const std::string> data_;
};

// A whole archive mapped into memory (private, never written back), and the
// open file, from which large stored records get mappings of their own.
struct MappedArchive {
  void* addr = nullptr;
  size_t size = 0;
  int fd = -1;
  const char* bytes() const { return static_cast<const char*>(addr); }
  ~MappedArchive() {
    if (addr != nullptr) ::munmap(addr, size);
    if (fd >= 0) ::close(fd);
  }
};

// Records at least this big are mapped in place; smaller ones are copied
// (a mapping costs a page and a kernel VMA; the count of those is limited).
constexpr uint64_t kMapMinBytes = uint64_t{1} << 16;

// Writable but private (as safetensors_file.cc): an in-place op on the
// tensor copies its page instead of faulting, the file is never written,
// and each call gets its own pages, so two reads stay independent. Read-only
// where strict overcommit refuses that. nullptr on failure.
void* MapPrivate(int fd, size_t size, off_t offset) {
  void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd,
                      offset);
  if (addr == MAP_FAILED && errno == ENOMEM) {
    addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, offset);
  }
  return addr == MAP_FAILED ? nullptr : addr;
}

// nullptr when the file cannot be mapped (the caller reads it instead).
std::shared_ptr<MappedArchive> MapArchive(const std::string& path) {
  auto map = std::make_shared<MappedArchive>();
  map->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (map->fd < 0) return nullptr;
  struct stat st;
  if (::fstat(map->fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return nullptr;
  map->size = static_cast<size_t>(st.st_size);
  map->addr = MapPrivate(map->fd, map->size, 0);
  if (map->addr == nullptr) return nullptr;
  return map;
}

// A CPU tensor over `numel` elements of the file at `offset`, in a mapping
// of its own that lives as long as the tensor; undefined when mmap fails.
at::Tensor MapRecord(const MappedArchive& map, uint64_t offset, int64_t numel,
                     uint64_t nbytes, const at::TensorOptions& options) {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset - offset % page;
  const size_t length = static_cast<size_t>(offset - start + nbytes);
  void* addr = MapPrivate(map.fd, length, static_cast<off_t>(start));
  if (addr == nullptr) return at::Tensor();
#ifdef MADV_POPULATE_READ
  // Map every page now, in one call: the first pass over the tensor (the
  // load's hash) then streams without a page fault per 16 pages (-10 % load
  // time on the bench dataset). Best effort: older kernels say EINVAL.
  ::madvise(addr, length, MADV_POPULATE_READ);
#endif
  return at::from_blob(static_cast<char*>(addr) + (offset - start), {numel},
                       [addr, length](void*) { ::munmap(addr, length); }, options);
}

// PyTorchStreamReader's reads served from the mapping (bounds-checked).
class MappedAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit MappedAdapter(std::shared_ptr<const MappedArchive> map) : map_(std::move(map)) {}
  size_t size() const override { return map_->size; }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= map_->size) return 0;
    n = std::min<uint64_t>(n, map_->size - pos);
    std::memcpy(buf, map_->bytes() + pos, n);
    return n;
  }

 private:
  std::shared_ptr<const MappedArchive> map_;
};

uint32_t Le32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // zip is little-endian, and so are our hosts
  return v;
}
uint16_t Le16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// True when the zip entry `record` whose data starts at `data` (as
// getRecordOffset reports it) is stored uncompressed, `size` bytes, inside
// the file: then its bytes can be used in place. Finds the entry's local
// header just before the data (signature, name, and lengths that end exactly
// at `data`) and its sizes (in the header, its zip64 extra field, or the data
// descriptor after the data); any doubt answers false and the record is read
// normally.
bool StoredInPlace(const MappedArchive& map, uint64_t data, const std::string& record,
                   uint64_t size) {
  constexpr uint64_t kHeader = 30;
  if (data > map.size || size > map.size - data || data < kHeader) return false;
  const uint64_t lowest = data > kHeader + 8192 ? data - kHeader - 8192 : 0;
  for (uint64_t at = data - kHeader + 1; at-- > lowest;) {
    const char* h = map.bytes() + at;
    if (Le32(h) != 0x04034b50u) continue;
    const uint64_t name_len = Le16(h + 26), extra_len = Le16(h + 28);
    if (at + kHeader + name_len + extra_len != data) continue;
    const absl::string_view name(h + kHeader, name_len);
    if (!absl::EndsWith(name, absl::StrCat("/", record)) && name != record) continue;
    const uint16_t flags = Le16(h + 6), method = Le16(h + 8);
    uint64_t compressed = Le32(h + 18), uncompressed = Le32(h + 22);
    if (method != 0) return false;
    if ((flags & 8) != 0) {
      // Sizes in the data descriptor right after the data (torch.save writes
      // them so): optional signature, crc32, then 4- or 8-byte sizes.
      uint64_t d = data + size;
      if (d + 4 <= map.size && Le32(map.bytes() + d) == 0x08074b50u) d += 4;
      if (d + 12 <= map.size && Le32(map.bytes() + d + 4) == size &&
          Le32(map.bytes() + d + 8) == size) {
        return true;
      }
      uint64_t c64 = 0, u64 = 0;
      if (d + 20 <= map.size) {
        std::memcpy(&c64, map.bytes() + d + 4, 8);
        std::memcpy(&u64, map.bytes() + d + 12, 8);
      }
      return c64 == size && u64 == size;
    }
    if (compressed == 0xffffffffu || uncompressed == 0xffffffffu) {
      // zip64: the sizes are in the extra field's 0x0001 block.
      bool found = false;
      for (uint64_t x = 0; x + 4 <= extra_len && !found;) {
        const char* f = h + kHeader + name_len + x;
        const uint16_t id = Le16(f), len = Le16(f + 2);
        if (id == 1 && len >= 16 && x + 4 + 16 <= extra_len) {
          std::memcpy(&uncompressed, f + 4, 8);
          std::memcpy(&compressed, f + 12, 8);
          found = true;
        }
        x += 4 + len;
      }
      if (!found) return false;
    }
    return compressed == size && uncompressed == size;
  }
  return false;
}

std::string ExceptionText(const std::exception& e) {
  if (auto* c10e = dynamic_cast<const c10::Error*>(&e)) {
    return c10e->what_without_backtrace();
  }
  return e.what();
}

std::string Shape(const std::vector<int64_t>& v) {
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

struct Entry {
  TensorInfo info;
  PickleTensorRef ref;
};

// Elements of the storage a tensor spans (offset included); false on overflow.
bool StorageExtent(const PickleTensorRef& t, int64_t* extent, int64_t* numel) {
  int64_t last = t.storage_offset;
  *numel = 1;
  for (size_t i = 0; i < t.size.size(); ++i) {
    if (__builtin_mul_overflow(*numel, t.size[i], numel)) return false;
  }
  if (*numel == 0) {
    *extent = t.storage_offset;
    return true;
  }
  for (size_t i = 0; i < t.size.size(); ++i) {
    int64_t span;
    if (__builtin_mul_overflow(t.size[i] - 1, t.stride[i], &span) ||
        __builtin_add_overflow(last, span, &last)) {
      return false;
    }
  }
  return !__builtin_add_overflow(last, 1, extent);
}

// Turns the unpickled tree into named tensors; non-tensor subtrees are
// reported once, at their root, in `skipped`.
class Flattener {
 public:
  absl::Status Walk(const PickleValue& v, const std::string& name) {
    if (++visits_ > kMaxFlattenVisits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.pkl has more than ", kMaxFlattenVisits, " entries to list"));
    }
    const std::string shown = name.empty() ? "<root>" : name;
    if (v.kind == PickleKind::kTensor) return Add(v.tensor, name);
    bool container = v.kind == PickleKind::kDict ||
                     v.kind == PickleKind::kList ||
                     v.kind == PickleKind::kTuple;
    if (!container) {
      skipped.push_back(absl::StrCat(shown, " (", PickleKindName(v.kind), ")"));
      return absl::OkStatus();
    }
    int64_t n = CountTensors(v);
    if (n == 0) {
      skipped.push_back(
          absl::StrCat(shown, " (", PickleKindName(v.kind), ", not a tensor)"));
      return absl::OkStatus();
    }
    if (IsOptimizerState(v)) {
      skipped.push_back(absl::StrCat(shown, " (optimizer state with ", n,
                                     " tensors, not model weights)"));
      return absl::OkStatus();
    }
    if (v.kind == PickleKind::kDict) {
      for (const auto& [key, child] : v.dict) {
        std::string k = key->kind == PickleKind::kInt
                            ? absl::StrCat(key->integer)
                            : key->str;
        RETURN_IF_ERROR(
            Walk(*child, name.empty() ? k : absl::StrCat(name, ".", k)));
      }
    } else {
      for (size_t i = 0; i < v.items.size(); ++i) {
        RETURN_IF_ERROR(Walk(*v.items[i], name.empty()
                                              ? absl::StrCat(i)
                                              : absl::StrCat(name, ".", i)));
      }
    }
    return absl::OkStatus();
  }

  std::vector<Entry> entries;
  std::vector<std::string> skipped;

 private:
  // torch.optim.Optimizer.state_dict(): {"state": {...}, "param_groups":
  // [...]}.
  static bool IsOptimizerState(const PickleValue& v) {
    if (v.kind != PickleKind::kDict) return false;
    const PickleValue* state = v.Get("state");
    const PickleValue* groups = v.Get("param_groups");
    return state != nullptr && groups != nullptr &&
           state->kind == PickleKind::kDict &&
           groups->kind == PickleKind::kList;
  }

  // Memoized per node: shared subtrees (memo references) are counted once.
  int64_t CountTensors(const PickleValue& v) {
    if (v.kind == PickleKind::kTensor) return 1;
    auto it = counts_.find(&v);
    if (it != counts_.end()) return it->second;
    int64_t n = 0;
    for (const auto& item : v.items) n += CountTensors(*item);
    for (const auto& kv : v.dict) n += CountTensors(*kv.second);
    counts_[&v] = n;
    return n;
  }

  absl::Status Add(const PickleTensorRef& t, const std::string& name) {
    if (!names_.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("two tensors are named '", name,
                       "' after flattening nested dicts with '.'"));
    }
    int64_t extent = 0, numel = 0, nbytes = 0, storage_bytes = 0;
    if (!StorageExtent(t, &extent, &numel) ||
        __builtin_mul_overflow(numel, DTypeSize(t.storage.dtype), &nbytes) ||
        __builtin_mul_overflow(t.storage.numel, DTypeSize(t.storage.dtype),
                               &storage_bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", name, "' has sizes ", Shape(t.size), " and strides ",
          Shape(t.stride), " that overflow 64 bits"));
    }
    if (extent > t.storage.numel) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "' (offset ", t.storage_offset,
                       ", size ", Shape(t.size), ", stride ", Shape(t.stride),
                       ") needs ", extent, " elements of storage '",
                       t.storage.key, "', which holds ", t.storage.numel));
    }
    Entry e;
    e.info.name = name;
    e.info.dtype = t.storage.dtype;
    e.info.shape = t.size;
    e.info.nbytes = nbytes;
    e.ref = t;
    entries.push_back(std::move(e));
    return absl::OkStatus();
  }

  int64_t visits_ = 0;
  std::unordered_map<const PickleValue*, int64_t> counts_;
  std::set<std::string> names_;
};

class TorchPtFile final : public TensorSource {
 public:
  TorchPtFile(std::string path, std::unique_ptr<PyTorchStreamReader> reader,
              std::shared_ptr<const MappedArchive> map, std::vector<Entry> entries,
              std::vector<std::string> skipped)
      : path_(std::move(path)),
        reader_(std::move(reader)),
        map_(std::move(map)),
        entries_(std::move(entries)),
        skipped_(std::move(skipped)) {
    for (size_t i = 0; i < entries_.size(); ++i) {
      entries_[i].info.file = path_;
      infos_.push_back(entries_[i].info);
      index_[entries_[i].info.name] = i;
    }
  }

  std::string format() const override { return "torch-zip"; }
  std::string path() const override { return path_; }
  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  std::vector<std::string> skipped_entries() const override { return skipped_; }

  absl::StatusOr<at::Tensor> Read(absl::string_view name) const override {
    auto it = index_.find(std::string(name));
    if (it == index_.end()) {
      return absl::NotFoundError(absl::StrCat("tensor '", name,
                                              "' not found in '", path_,
                                              "'; present: ", Nearest(name)));
    }
    const Entry& e = entries_[it->second];
    try {
      return Materialize(e);
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "out of memory reading tensor '", name, "' from '", path_, "'"));
    } catch (const std::exception& ex) {
      return absl::InvalidArgumentError(absl::StrCat("reading tensor '", name,
                                                     "' from '", path_,
                                                     "': ", ExceptionText(ex)));
    }
  }

 private:
  absl::StatusOr<at::Tensor> Materialize(const Entry& e) const {
    const PickleTensorRef& t = e.ref;
    const at::TensorOptions options =
        at::TensorOptions().dtype(ToScalarType(t.storage.dtype));
    const int64_t want = t.storage.numel * DTypeSize(t.storage.dtype);
    const std::string record = absl::StrCat("data/", t.storage.key);
    at::Tensor storage;
    if (map_ != nullptr && static_cast<uint64_t>(want) >= kMapMinBytes) {
      // Zero-copy: a stored record is the storage's bytes, in place in the
      // file (the load then costs no allocation, page zeroing or copy).
      uint64_t offset;
      {
        std::lock_guard<std::mutex> lock(mu_);
        offset = reader_->getRecordOffset(record);
      }
      if (StoredInPlace(*map_, offset, record, static_cast<uint64_t>(want)) &&
          offset % static_cast<uint64_t>(DTypeSize(t.storage.dtype)) == 0) {
        storage = MapRecord(*map_, offset, t.storage.numel, static_cast<uint64_t>(want),
                            options);
      }
    }
    if (!storage.defined()) {
      at::DataPtr data;
      size_t got = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        std::tie(data, got) = reader_->getRecord(record);
      }
      if (static_cast<int64_t>(got) != want) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor '", e.info.name, "': storage record '", record, "' in '", path_,
            "' holds ", got, " bytes; expected ", want, " (", t.storage.numel,
            " elements of ", DTypeName(t.storage.dtype), ")"));
      }
      if (want == 0) return at::empty(t.size, options);
      auto holder = std::make_shared<at::DataPtr>(std::move(data));
      storage = at::from_blob(holder->get(), {t.storage.numel}, [holder](void*) {}, options);
    }
    at::Tensor view = storage.as_strided(t.size, t.stride, t.storage_offset);
    // Zero-copy when the tensor is exactly its whole storage; otherwise copy
    // out (views, transposes, shared storages) and let the record go.
    if (t.storage_offset == 0 && view.numel() == t.storage.numel &&
        view.is_contiguous()) {
      return view;
    }
    return view.clone(at::MemoryFormat::Contiguous);
  }

  // Up to three names, best first by shared prefix plus shared suffix.
  // (Simple on purpose; the weight map gives the detailed suggestions.)
  std::string Nearest(absl::string_view name) const {
    std::vector<std::pair<size_t, const std::string*>> scored;
    for (const TensorInfo& t : infos_) {
      absl::string_view n = t.name;
      size_t pre = 0, suf = 0;
      while (pre < n.size() && pre < name.size() && n[pre] == name[pre]) ++pre;
      while (suf < n.size() - pre && suf < name.size() - pre &&
             n[n.size() - 1 - suf] == name[name.size() - 1 - suf]) {
        ++suf;
      }
      scored.emplace_back(pre + suf, &t.name);
    }
    std::stable_sort(
        scored.begin(), scored.end(),
        [](const auto& a, const auto& b) { return a.first > b.first; });
    if (scored.empty()) return "(none)";
    std::vector<std::string> out;
    for (size_t i = 0; i < scored.size() && i < 3; ++i)
      out.push_back(*scored[i].second);
    return absl::StrCat("'", absl::StrJoin(out, "', '"), "'");
  }

  std::string path_;
  std::unique_ptr<PyTorchStreamReader> reader_;
  std::shared_ptr<const MappedArchive> map_;  // null: records are read
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  std::vector<TensorInfo> infos_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::string> skipped_;
};

absl::Status NotZip(const std::string& path, absl::string_view head) {
  if (!head.empty() && static_cast<uint8_t>(head[0]) == 0x80) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path,
                     "' is in the legacy (pre-1.6, non-zip) torch.save format, "
                     "which is not supported; ",
                     kConvertHint));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "'", path,
      "' is not a torch.save zip archive (no PK zip magic); if it was "
      "written by torch.save, ",
      kConvertHint));
}

absl::StatusOr<TensorSourcePtr> OpenReader(
    const std::string& path, std::unique_ptr<PyTorchStreamReader> reader,
    std::shared_ptr<const MappedArchive> map = nullptr) {
  if (reader->hasRecord("byteorder")) {
    auto [ptr, n] = reader->getRecord("byteorder");
    std::string order(static_cast<const char*>(ptr.get()), n);
    if (order != "little") {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "' was saved with byte order '", order,
                       "'; expected 'little'"));
    }
  }
  if (!reader->hasRecord("data.pkl")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path,
        "' is a zip archive without data.pkl; not a torch.save file"));
  }
  auto [pkl, pkl_size] = reader->getRecord("data.pkl");
  if (static_cast<int64_t>(pkl_size) > kMaxPickleBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "': data.pkl is ", pkl_size,
                     " bytes; the limit is ", kMaxPickleBytes));
  }
  ASSIGN_OR_RETURN(PickleValuePtr root,
                   ParsePickle(absl::string_view(
                       static_cast<const char*>(pkl.get()), pkl_size)),
                   "reading '", path, "'");
  Flattener flat;
  RETURN_IF_ERROR(flat.Walk(*root, ""), "reading '", path, "'");
  for (const Entry& e : flat.entries) {
    std::string record = absl::StrCat("data/", e.ref.storage.key);
    if (!reader->hasRecord(record)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "reading '", path, "': tensor '", e.info.name, "' refers to record '",
          record, "', which the archive lacks"));
    }
  }
  return TensorSourcePtr(std::make_unique<TorchPtFile>(
      path, std::move(reader), std::move(map), std::move(flat.entries),
      std::move(flat.skipped)));
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read '", path, "'"));
  }
  return bytes;
}

}  // namespace

absl::StatusOr<TensorSourcePtr> OpenTorchPt(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("torch checkpoint '", path, "' does not exist"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("torch checkpoint '", path, "' is not a regular file"));
  }
  char head_buf[4] = {0, 0, 0, 0};
  std::ifstream in(path, std::ios::binary);
  in.read(head_buf, sizeof(head_buf));
  absl::string_view head(head_buf, static_cast<size_t>(in.gcount()));
  in.close();
  if (head.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("torch checkpoint '", path, "' is empty"));
  }
  try {
    if (IsGzip(head)) {
      ASSIGN_OR_RETURN(std::string compressed, ReadWholeFile(path));
      ASSIGN_OR_RETURN(std::string raw, Gunzip(compressed, path));
      if (!absl::StartsWith(raw, "PK")) return NotZip(path, raw.substr(0, 1));
      auto data = std::make_shared<const std::string>(std::move(raw));
      return OpenReader(path, std::make_unique<PyTorchStreamReader>(
                                  std::make_shared<BufferAdapter>(data)));
    }
    if (!absl::StartsWith(head, "PK")) return NotZip(path, head);
    if (std::shared_ptr<const MappedArchive> map = MapArchive(path)) {
      return OpenReader(path,
                        std::make_unique<PyTorchStreamReader>(
                            std::make_shared<MappedAdapter>(map)),
                        map);
    }
    return OpenReader(path, std::make_unique<PyTorchStreamReader>(path));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory opening '", path, "'"));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path,
        "' is not a valid torch.save zip archive: ", ExceptionText(e)));
  }
}

}  // namespace dflash::weights
