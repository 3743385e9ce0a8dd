// valet info: a model's metadata, tensor table, configuration and memory.
#include <cstdio>

#include "cli_args.h"
#include "commands.h"
#include "engine/engine.h"
#include "kernels/kernel_table.h"
#include "kv/snapshot_store.h"
#include "process_memory.h"
#include "tokenizer/tokenizer.h"

namespace valet::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true, "GGUF model file (required)"},
    {"--ctx-size", "-c", true, "context size used for the memory report (default: the model's)"},
    {"--kv-type", nullptr, true, kKvTypeHelp},
    {"--weights-cache", nullptr, true, kWeightsCacheHelp},
    {"--load-profile", nullptr, false, "only where loading the model spends its time, phase by phase"},
};

std::string ShapeText(const GgufTensorInfo& t) {
  std::string s;
  for (int i = 0; i < t.n_dims; ++i) s += (i ? " x " : "") + std::to_string(t.ne[i]);
  return s;
}

void PrintFile(const GgufFile& f) {
  std::printf("file: %s (GGUF v%u, %zu bytes, alignment %zu)\n\nmetadata (%zu keys):\n", f.path().c_str(),
              f.version(), f.file_size(), f.alignment(), f.metadata_count());
  for (const GgufKeyValue& kv : f.metadata()) {
    std::printf("  %-44.*s %s\n", static_cast<int>(kv.key.size()), kv.key.data(),
                GgufFile::ValueToString(kv.value).c_str());
  }
  std::printf("\ntensors (%zu):\n  %-32s %-6s %-16s %12s %12s\n", f.tensors().size(), "name", "type", "shape",
              "offset", "bytes");
  for (const GgufTensorInfo& t : f.tensors()) {
    std::printf("  %-32s %-6s %-16s %12llu %12zu\n", t.name.c_str(), GgmlTypeName(t.type), ShapeText(t).c_str(),
                static_cast<unsigned long long>(t.offset), t.nbytes);
  }
}

// What the windowed layers save: a sequence's KV per token of context, by
// layer kind, against the same shape with every layer attending to all.
void PrintWindowedKv(const ModelConfig& c, const KvLayout& kv) {
  for (int32_t n : {4096, 32768}) {
    const KvLayout l = ModelKvLayout(c, n, kv.block_tokens, kv.type);
    const double blocks = static_cast<double>((n + l.block_tokens - 1) / l.block_tokens);
    const double full_layers = blocks * l.n_full_slices() * l.block_bytes() / n / 1024.0;
    const double all = l.sequence_bytes(n) / static_cast<double>(n) / 1024.0;
    std::printf("KV at a %d-token context: %.1f KiB per token (%d full layers %.1f, %d windowed layers %.1f) "
                "against %.1f KiB with full attention: %.1fx less\n",
                n, all, l.n_full_layers(), full_layers, l.n_windowed_layers(), all - full_layers,
                l.token_bytes() / 1024.0, l.token_bytes() / 1024.0 / all);
  }
}

}  // namespace

int RunInfo(std::span<char* const> argv) {
  Args args;
  if (auto code = ParseCommandLine("info", "-m MODEL", kFlags, argv, &args)) return *code;
  EngineOptions options;
  Result<std::string> path = args.String("--model", std::nullopt);
  if (!path.ok()) return Fail("info", path.status());
  options.model_path = *path;
  Result<int64_t> n_ctx = args.Int("--ctx-size", 0, 0, 1 << 20);
  if (!n_ctx.ok()) return Fail("info", n_ctx.status());
  options.n_ctx = static_cast<int32_t>(*n_ctx);
  Result<KvType> kv_type = args.KvTypeFlag();
  if (!kv_type.ok()) return Fail("info", kv_type.status());
  options.kv_type = *kv_type;
  options.n_threads = 1;
  Result<std::string> cache = WeightsCachePath(args);
  if (!cache.ok()) return Fail("info", cache.status());
  options.weights_cache.path = *cache;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(options);
  if (!engine.ok()) return Fail("info", engine.status());
  ReportWeightsCache("info", (*engine)->model().load_report());
  if (args.Has("--load-profile")) {
    std::printf("load: %s\n", LoadProfileText((*engine)->load_profile()).c_str());
    return 0;
  }
  const Engine& e = **engine;
  PrintFile(e.model().file());
  const ModelConfig& c = e.model().config();
  std::printf("\nmodel: %s, %d layers, n_embd %d, %d heads (%d KV, head size %d), n_ff %d, vocab %d, "
              "context %d, RoPE base %g over %d dims, RMS eps %g, %s output\n",
              c.architecture.c_str(), c.n_layer, c.n_embd, c.n_head, c.n_head_kv, c.head_dim, c.n_ff, c.n_vocab,
              c.n_ctx_train, c.rope_base, c.rope_dim, c.rms_eps, e.model().tied_output() ? "tied" : "separate");
  const ArchSpec& a = *c.arch;
  const int32_t n_ctx_used = e.options().n_ctx > 0 ? e.options().n_ctx : c.n_ctx_train;
  const LlamaLayer& l0 = e.model().layers().front();
  std::printf("architecture: %s, RoPE %s%s, %s QKV, %s gate/up (%s)%s%s%s%s\n", c.architecture.c_str(),
              c.rope_style == RopeStyle::kNeox ? "neox (halves)" : "adjacent pairs",
              e.model().rope_freq_factors(n_ctx_used) != nullptr ? " with frequency factors" : "",
              a.qkv == TensorLayout::kFused ? "fused" : "separate", a.gate_up == TensorLayout::kFused ? "fused" : "separate",
              a.activation == FfnActivation::kGeluTanh ? "GeGLU" : "SwiGLU", l0.bq != nullptr ? ", QKV biases" : "",
              l0.q_norm != nullptr ? ", per-head Q/K norms" : "", l0.post_attn_norm != nullptr ? ", post-block norms" : "",
              a.embd_scale ? ", embeddings scaled by sqrt(n_embd)" : "");
  if (c.n_swa > 0) {
    int32_t windowed = 0;
    for (int32_t il = 0; il < c.n_layer; ++il) windowed += c.sliding(il) ? 1 : 0;
    std::printf("attention: %d of %d layers see the last %d positions (RoPE base %g), the other %d all of them "
                "(RoPE base %g, positions x%g)\n",
                windowed, c.n_layer, c.n_swa, c.rope_base_swa, c.n_layer - windowed, c.rope_base, c.rope_freq_scale);
  }
  const GgufValue* tmpl = e.model().file().Find("tokenizer.chat_template");
  std::printf("chat template: %s\n", tmpl != nullptr ? "from the model (tokenizer.chat_template)"
                                                     : "none in the file (the built-in ChatML is used)");
  const Vocabulary& vocab = e.tokenizer().vocabulary();
  std::printf("tokenizer: %s, pre-tokenizer %s, %d tokens\n", std::string(e.tokenizer().kind_name()).c_str(),
              vocab.pre().empty() ? "default" : vocab.pre().c_str(), vocab.size());
  std::printf("kernels: %s\n", ActiveKernelsName());
  const MemoryReport m = e.memory();
  const KvLayout& kv = e.kv_pool().layout();
  std::printf("memory: weights %.2f MiB file-backed and %.2f MiB packed in anonymous memory, KV pool %.2f MiB (%d "
              "blocks of %d tokens), scratch %.2f MiB, process resident %.2f MiB\n",
              m.weights_mapped / 1048576.0, m.weights_anonymous / 1048576.0, m.kv_pool / 1048576.0, e.kv_pool().capacity_blocks(),
              e.options().kv_block_tokens, m.scratch / 1048576.0, ResidentBytes() / 1048576.0);
  std::printf("KV cache: %s, %.1f KiB per token, %.1f MiB for the full %d-token context of one sequence\n",
              KvTypeName(kv.type), kv.token_bytes() / 1024.0, kv.sequence_bytes(n_ctx_used) / 1048576.0, n_ctx_used);
  if (c.n_swa > 0) PrintWindowedKv(c, kv);
  const SnapshotStoreOptions store;
  std::printf("snapshot store (defaults for parked sequences): RAM tier %.0f MiB, then disk\n",
              store.ram_budget_bytes / 1048576.0);
  return 0;
}

}  // namespace valet::cli
