package dev.valet;

/** How far {@link Valet#createAsync} has come, in order (valet.h's valet_load_stage). */
public enum LoadStage {
  /** Mapping and checking the model file. */
  MAP,
  /** Repacking the weights: done of total bytes. */
  PACK,
  /** Publishing the weights cache ({@link Valet.Options#weightsCache}). */
  WRITE_CACHE,
  /** Tokenizer, context, KV pool, snapshot store and scheduler. */
  PREPARE
}
