#include "weights/torch_pt_file.h"

#include "weights/dtype_torch.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <new>
#include <optional>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/mapped_file.h"
#include "common/status_macros.h"
#include "formats/gzip_inflate.h"
#include "formats/pickle_flatten.h"
#include "formats/pickle_reader.h"
#include "formats/zip_archive.h"
#include "weights/name_suggest.h"

namespace dflash::weights {
namespace {

constexpr int64_t kMaxPickleBytes = int64_t{1} << 30;
constexpr absl::string_view kConvertHint =
    "load it with torch.load and save it again with torch.save(obj, path) "
    "(PyTorch >= 1.6 writes the zip format)";

// Records at least this big are mapped in place; smaller ones are copied
// (a mapping costs a page and a kernel VMA; the count of those is limited).
constexpr uint64_t kMapMinBytes = uint64_t{1} << 16;

// A CPU tensor over `numel` elements of the file at `offset`, in a mapping
// of its own that lives as long as the tensor; undefined when mmap fails.
at::Tensor MapRecord(const MappedFile& map, uint64_t offset, int64_t numel, uint64_t nbytes,
                     const at::TensorOptions& options) {
  std::optional<MappedFile::Pages> pages = map.MapPages(offset, nbytes);
  if (!pages.has_value()) return at::Tensor();
  return at::from_blob(
      pages->data, {numel}, [pages = *pages](void*) { MappedFile::Unmap(pages); }, options);
}

std::string ExceptionText(const std::exception& e) {
  if (auto* c10e = dynamic_cast<const c10::Error*>(&e)) {
    return c10e->what_without_backtrace();
  }
  return e.what();
}

struct Entry {
  TensorInfo info;
  formats::PickleTensorRef ref;
};

// The archive's bytes: a private mapping of the file, or a buffer (a
// gzip-compressed file, or a file that cannot be mapped).
struct ArchiveBytes {
  std::shared_ptr<const MappedFile> map;  // null for a buffer
  std::shared_ptr<const std::string> buffer;
  absl::string_view view() const { return map != nullptr ? map->bytes() : *buffer; }
};

class TorchPtFile final : public TensorSource {
 public:
  TorchPtFile(std::string path, ArchiveBytes bytes, formats::ZipArchive zip, std::string prefix,
              formats::FlatCheckpoint flat)
      : path_(std::move(path)),
        bytes_(std::move(bytes)),
        zip_(std::move(zip)),
        prefix_(std::move(prefix)),
        skipped_(std::move(flat.skipped)),
        wrapper_(std::move(flat.unwrapped)) {
    for (formats::FlatTensor& t : flat.tensors) {
      Entry e;
      e.info.name = std::move(t.name);
      e.info.dtype = t.ref.storage.dtype;
      e.info.shape = t.ref.size;
      e.info.nbytes = t.nbytes;
      e.info.file = path_;
      e.ref = std::move(t.ref);
      index_[e.info.name] = entries_.size();
      infos_.push_back(e.info);
      entries_.push_back(std::move(e));
    }
  }

  std::string format() const override { return "torch-zip"; }
  std::string path() const override { return path_; }
  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  std::vector<std::string> skipped_entries() const override { return skipped_; }
  std::string unwrapped_wrapper() const override { return wrapper_; }

  absl::StatusOr<at::Tensor> Read(absl::string_view name) const override {
    auto it = index_.find(std::string(name));
    if (it == index_.end()) {
      return absl::NotFoundError(
          absl::StrCat("tensor '", name, "' not found in '", path_,
                       "'; nearest present: ", QuoteList(NearestNames(name, names()))));
    }
    const Entry& e = entries_[it->second];
    try {
      return Materialize(e);
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of memory reading tensor '", name, "' from '", path_, "'"));
    } catch (const std::exception& ex) {
      return absl::InvalidArgumentError(
          absl::StrCat("reading tensor '", name, "' from '", path_, "': ", ExceptionText(ex)));
    }
  }

 private:
  // The file offset of e's storage record when Materialize maps it in
  // place: a stored (not deflated) record of at least kMapMinBytes, aligned
  // for its element type, in a mapped (not gunzipped) archive. 0 otherwise:
  // the record is copied (no data starts at offset 0 of a zip).
  uint64_t InPlaceOffset(const Entry& e, const formats::ZipEntry& zipped) const {
    const formats::PickleTensorRef& t = e.ref;
    const uint64_t want =
        static_cast<uint64_t>(t.storage.numel * formats::DTypeSize(t.storage.dtype));
    if (bytes_.map == nullptr || want < kMapMinBytes || zipped.method != 0 ||
        zipped.compressed_size != want) {
      return 0;
    }
    absl::StatusOr<uint64_t> offset = zip_.DataOffset(zipped);
    if (!offset.ok() || *offset % static_cast<uint64_t>(formats::DTypeSize(t.storage.dtype)) != 0)
      return 0;
    return *offset;
  }

  // Materialize returns the record's mapping itself (not a copy out of it)
  // when the tensor is its whole storage, contiguous.
  static bool WholeStorage(const formats::PickleTensorRef& t) {
    int64_t expect = 1, numel = 1;
    for (size_t d = t.size.size(); d-- > 0;) {
      if (t.size[d] != 1 && t.stride[d] != expect) return false;
      expect *= t.size[d];
      numel *= t.size[d];
    }
    return t.storage_offset == 0 && numel == t.storage.numel;
  }

  std::optional<FileStamp> MappedStamp(absl::string_view name) const override {
    auto it = index_.find(std::string(name));
    if (it == index_.end()) return std::nullopt;
    const Entry& e = entries_[it->second];
    const formats::ZipEntry* zipped = zip_.Find(prefix_ + absl::StrCat("data/", e.ref.storage.key));
    if (zipped == nullptr || zipped->uncompressed_size != zipped->compressed_size ||
        !WholeStorage(e.ref) || InPlaceOffset(e, *zipped) == 0) {
      return std::nullopt;
    }
    return bytes_.map->stamp();
  }

  absl::StatusOr<at::Tensor> Materialize(const Entry& e) const {
    const formats::PickleTensorRef& t = e.ref;
    const at::TensorOptions options = at::TensorOptions().dtype(ToScalarType(t.storage.dtype));
    const int64_t want = t.storage.numel * formats::DTypeSize(t.storage.dtype);
    const std::string record = absl::StrCat("data/", t.storage.key);
    const formats::ZipEntry* zipped = zip_.Find(prefix_ + record);  // present: checked at open
    // The declared size is checked before any memory is taken, so a small
    // deflated record cannot expand into more than the pickle asked for.
    if (zipped->uncompressed_size != static_cast<uint64_t>(want)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", e.info.name, "': storage record '", record, "' in '", path_,
                       "' holds ", zipped->uncompressed_size, " bytes; expected ", want, " (",
                       t.storage.numel, " elements of ", formats::DTypeName(t.storage.dtype), ")"));
    }
    if (want == 0) return at::empty(t.size, options);
    at::Tensor storage;
    // Zero-copy: a stored record is the storage's bytes, in place in the
    // file (the load then costs no allocation, page zeroing or copy).
    // Deflated, gunzipped, small or misaligned records are copied.
    if (const uint64_t offset = InPlaceOffset(e, *zipped); offset != 0) {
      storage =
          MapRecord(*bytes_.map, offset, t.storage.numel, static_cast<uint64_t>(want), options);
    }
    if (!storage.defined()) {
      storage = at::empty({t.storage.numel}, options);
      RETURN_IF_ERROR(zip_.ReadInto(*zipped, static_cast<char*>(storage.data_ptr()),
                                    static_cast<uint64_t>(want)),
                      "reading tensor '", e.info.name, "' from '", path_, "'");
    }
    at::Tensor view = storage.as_strided(t.size, t.stride, t.storage_offset);
    // Zero-copy when the tensor is exactly its whole storage; otherwise copy
    // out (views, transposes, shared storages) and let the record go.
    if (t.storage_offset == 0 && view.numel() == t.storage.numel && view.is_contiguous()) {
      return view;
    }
    return view.clone(at::MemoryFormat::Contiguous);
  }

  std::string path_;
  ArchiveBytes bytes_;  // what zip_ views: declared before it
  formats::ZipArchive zip_;
  std::string prefix_;  // the archive's top folder, with its '/'
  std::vector<Entry> entries_;
  std::vector<TensorInfo> infos_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::string> skipped_;
  std::string wrapper_;
};

absl::Status NotZip(const std::string& path, absl::string_view head) {
  if (!head.empty() && static_cast<uint8_t>(head[0]) == 0x80) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path,
                     "' is in the legacy (pre-1.6, non-zip) torch.save format, "
                     "which is not supported; ",
                     kConvertHint));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'", path,
                   "' is not a torch.save zip archive (no PK zip magic); if it was "
                   "written by torch.save, ",
                   kConvertHint));
}

// Reads a whole record of at most `max` bytes (checked before allocating).
absl::StatusOr<std::string> ReadSmall(const formats::ZipArchive& zip, const formats::ZipEntry& e,
                                      uint64_t max, const std::string& path) {
  if (e.uncompressed_size > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "': ", e.name, " is ", e.uncompressed_size, " bytes; the limit is ", max));
  }
  std::string out(e.uncompressed_size, '\0');
  RETURN_IF_ERROR(zip.ReadInto(e, out.data(), out.size()), "reading '", path, "'");
  return out;
}

absl::StatusOr<TensorSourcePtr> OpenArchive(const std::string& path, ArchiveBytes bytes) {
  absl::StatusOr<formats::ZipArchive> opened = formats::ZipArchive::Open(bytes.view());
  if (!opened.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "' is not a valid torch.save zip archive: ", opened.status().message()));
  }
  formats::ZipArchive zip = *std::move(opened);
  // torch.save puts every record in one top folder, named after the file
  // it was first saved as; the first entry names it (as libtorch reads it).
  if (zip.entries().empty() || zip.entries()[0].name.find('/') == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "' is not a valid torch.save zip archive: ",
        zip.entries().empty()
            ? "it holds no files"
            : absl::StrCat("its first entry '", zip.entries()[0].name, "' is not in a folder")));
  }
  const std::string prefix = zip.entries()[0].name.substr(0, zip.entries()[0].name.find('/') + 1);
  if (const formats::ZipEntry* order = zip.Find(prefix + "byteorder")) {
    ASSIGN_OR_RETURN(std::string text, ReadSmall(zip, *order, 16, path));
    if (text != "little") {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "' was saved with byte order '", text, "'; expected 'little'"));
    }
  }
  const formats::ZipEntry* pkl = zip.Find(prefix + "data.pkl");
  if (pkl == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is a zip archive without data.pkl; not a torch.save file"));
  }
  ASSIGN_OR_RETURN(std::string pickle, ReadSmall(zip, *pkl, kMaxPickleBytes, path));
  ASSIGN_OR_RETURN(formats::PickleValuePtr root, formats::ParsePickle(pickle), "reading '", path,
                   "'");
  ASSIGN_OR_RETURN(formats::FlatCheckpoint flat, formats::FlattenPickle(*root), "reading '", path,
                   "'");
  for (const formats::FlatTensor& t : flat.tensors) {
    std::string record = absl::StrCat("data/", t.ref.storage.key);
    if (zip.Find(prefix + record) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("reading '", path, "': tensor '", t.name,
                                                     "' refers to record '", record,
                                                     "', which the archive lacks"));
    }
  }
  return TensorSourcePtr(std::make_unique<TorchPtFile>(path, std::move(bytes), std::move(zip),
                                                       prefix, std::move(flat)));
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read '", path, "'"));
  }
  return bytes;
}

}  // namespace

absl::StatusOr<TensorSourcePtr> OpenTorchPt(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("torch checkpoint '", path, "' does not exist"));
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
    return absl::InvalidArgumentError(absl::StrCat("torch checkpoint '", path, "' is empty"));
  }
  try {
    ArchiveBytes bytes;
    if (formats::IsGzip(head)) {
      ASSIGN_OR_RETURN(std::string compressed, ReadWholeFile(path));
      ASSIGN_OR_RETURN(std::string raw, formats::Gunzip(compressed, path));
      if (!absl::StartsWith(raw, "PK")) return NotZip(path, raw.substr(0, 1));
      bytes.buffer = std::make_shared<const std::string>(std::move(raw));
      return OpenArchive(path, std::move(bytes));
    }
    if (!absl::StartsWith(head, "PK")) return NotZip(path, head);
    // The descriptor stays open: large stored records get mappings of their own.
    absl::StatusOr<std::shared_ptr<MappedFile>> map =
        MappedFile::Open(path, MappedFile::Descriptor::kKeepOpen);
    if (map.ok()) bytes.map = *std::move(map);
    if (bytes.map == nullptr) {  // cannot be mapped: read it instead
      ASSIGN_OR_RETURN(std::string raw, ReadWholeFile(path));
      bytes.buffer = std::make_shared<const std::string>(std::move(raw));
    }
    return OpenArchive(path, std::move(bytes));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory opening '", path, "'"));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not a valid torch.save zip archive: ", ExceptionText(e)));
  }
}

}  // namespace dflash::weights
