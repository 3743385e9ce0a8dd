// The bytes of a parked sequence's snapshot: everything needed to continue it
// bit-exactly (token history, the KV rows it alone holds, the sampler's
// penalty history and RNG state). The shared prefix is not in it: the parked
// sequence keeps referencing those blocks. Integrity (checksum, truncation)
// is the snapshot store's job; this layer checks that the bytes describe
// this sequence in this pool.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_pool.h"
#include "model/step_cut.h"
#include "sampling/sampler.h"
#include "valet/status.h"

namespace valet {

struct SnapshotHeader {
  int32_t kv_begin = 0;  // first position whose rows are stored (the shared prefix ends here)
  int32_t kv_end = 0;    // one past the last
  std::vector<int32_t> history;
  SamplerState sampler;
};

// Serializes `header` and the rows [kv_begin, kv_end) of `seq`, then, with a
// non-empty `cut`, how far a stopped step got: its tokens, the rows it wrote
// past kv_end (KvSequence::ExportPendingRows) and its hidden state.
std::vector<uint8_t> EncodeSequenceSnapshot(const SnapshotHeader& header, const KvSequence& seq,
                                            const StepCut* cut = nullptr);

struct DecodedSnapshot {
  SnapshotHeader header;
  const uint8_t* rows = nullptr;  // into the decoded bytes, ExportRows order
  StepCut cut;                    // empty when the snapshot holds none
  const uint8_t* cut_rows = nullptr;  // into the decoded bytes, ExportPendingRows order
};

// Corrupt when the bytes are malformed or laid out for another pool.
Result<DecodedSnapshot> DecodeSequenceSnapshot(std::span<const uint8_t> bytes, const KvLayout& layout);

}  // namespace valet
