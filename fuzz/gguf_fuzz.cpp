// libFuzzer target for the GGUF reader: any input must parse or fail with a
// one-line Status naming the input; a parsed file must be fully readable.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace {

constexpr char kName[] = "fuzz-input.gguf";

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

void CheckError(const valet::Status& s) {
  Check(!s.ok());
  Check(s.message().find(kName) != std::string::npos);
  Check(s.message().find('\n') == std::string::npos);
}

void ExerciseMetadata(const valet::GgufFile& f) {
  for (const valet::GgufKeyValue& kv : f.metadata()) {
    Check(f.Find(kv.key) == &kv.value);
    (void)valet::GgufFile::ValueToString(kv.value, 4);
    // Each getter either converts or fails with a proper error.
    if (auto r = f.GetUint(kv.key); !r.ok()) CheckError(r.status());
    if (auto r = f.GetInt(kv.key); !r.ok()) CheckError(r.status());
    if (auto r = f.GetFloat(kv.key); !r.ok()) CheckError(r.status());
    if (auto r = f.GetBool(kv.key); !r.ok()) CheckError(r.status());
    if (auto r = f.GetString(kv.key); !r.ok()) CheckError(r.status());
    if (auto r = f.GetStringArray(kv.key); !r.ok()) CheckError(r.status());
    if (auto r = f.GetFloatArray(kv.key); !r.ok()) CheckError(r.status());
    if (auto r = f.GetIntArray(kv.key); !r.ok()) CheckError(r.status());
  }
}

void ExerciseTensors(const valet::GgufFile& f) {
  uint64_t total = 0;
  unsigned sum = 0;
  for (const valet::GgufTensorInfo& t : f.tensors()) {
    Check(f.FindTensor(t.name) == &t);
    Check(t.n_dims >= 1 && t.n_dims <= 4);
    Check(t.offset % f.alignment() == 0);
    total += t.nbytes;
    // Touch every byte so ASan sees any pointer past the buffer.
    for (size_t i = 0; i < t.nbytes; ++i) sum += t.data[i];
  }
  Check(total <= f.file_size());
  volatile unsigned sink = sum;
  (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exactly sized copy, so ASan flags any read past the end.
  std::vector<uint8_t> bytes(data, data + size);
  valet::Result<valet::GgufFile> f = valet::GgufFile::FromBuffer(std::move(bytes), kName);
  if (!f.ok()) {
    CheckError(f.status());
    return 0;
  }
  ExerciseMetadata(*f);
  ExerciseTensors(*f);
  return 0;
}
