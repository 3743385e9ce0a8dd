package dev.valet;

/** A snapshot of the scheduler's counters, per tier and memory. */
public final class Stats {
  /** Tasks of one tier. (A class, not a record: records need API 34 or D8's desugaring.) */
  public static final class TierStats {
    private final long active, parked, done, cancelled, failed, generatedTokens, prefillTokens;

    TierStats(long[] v, int at) {
      active = v[at];
      parked = v[at + 1];
      done = v[at + 2];
      cancelled = v[at + 3];
      failed = v[at + 4];
      generatedTokens = v[at + 5];
      prefillTokens = v[at + 6];
    }

    /** Accepted, not finished. */
    public long active() {
      return active;
    }

    /** Of which parked now. */
    public long parked() {
      return parked;
    }

    public long done() {
      return done;
    }

    public long cancelled() {
      return cancelled;
    }

    public long failed() {
      return failed;
    }

    public long generatedTokens() {
      return generatedTokens;
    }

    /** Prompt tokens fed (recompute excluded). */
    public long prefillTokens() {
      return prefillTokens;
    }
  }

  public final long submitted, done, cancelled, failed, rejected;
  public final long steps, prefillTokens, decodeTokens, tokensRecomputed, preemptions;
  public final LifecycleState lifecycle;
  /** PowerManager.THERMAL_STATUS_* in effect (a headroom >= 1.0 counts as SEVERE). */
  public final int thermalStatus;
  public final TierStats[] tiers = new TierStats[Tier.values().length];
  public final long poolUsedBytes, poolCapacityBytes, snapshotRamBytes, snapshotDiskBytes;
  /**
   * Weights in file-backed pages (the model's mapping and the weights cache's, which the system may
   * drop and read again) and in anonymous memory (packed at start without a weights cache).
   */
  public final long weightsFileBackedBytes, weightsAnonymousBytes;
  /** Packed matrices this start mapped from the weights cache, and those it repacked. */
  public final int weightsMatricesMapped, weightsMatricesPacked;
  /** The forward pass's activations and matmul buffers (anonymous memory). */
  public final long scratchBytes;

  // The layout of valet_jni.cpp's NativeLib.stats.
  Stats(long[] v) {
    submitted = v[0];
    done = v[1];
    cancelled = v[2];
    failed = v[3];
    rejected = v[4];
    steps = v[5];
    prefillTokens = v[6];
    decodeTokens = v[7];
    tokensRecomputed = v[8];
    preemptions = v[9];
    lifecycle = LifecycleState.values()[(int) v[10]];
    thermalStatus = (int) v[11];
    int n = 12;
    for (int t = 0; t < tiers.length; ++t, n += 7) {
      tiers[t] = new TierStats(v, n);
    }
    poolUsedBytes = v[n];
    poolCapacityBytes = v[n + 1];
    snapshotRamBytes = v[n + 2];
    snapshotDiskBytes = v[n + 3];
    weightsFileBackedBytes = v[n + 4];
    weightsAnonymousBytes = v[n + 5];
    weightsMatricesMapped = (int) v[n + 6];
    weightsMatricesPacked = (int) v[n + 7];
    scratchBytes = v[n + 8];
  }

  public TierStats tier(Tier t) {
    return tiers[t.ordinal()];
  }
}
