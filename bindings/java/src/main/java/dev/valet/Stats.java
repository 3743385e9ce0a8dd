package dev.valet;

/** A snapshot of the scheduler's counters, per tier and memory. */
public final class Stats {
  /** Tasks of one tier. */
  public record TierStats(
      long active, long parked, long done, long cancelled, long failed, long generatedTokens, long prefillTokens) {}

  public final long submitted, done, cancelled, failed, rejected;
  public final long steps, prefillTokens, decodeTokens, tokensRecomputed, preemptions;
  public final LifecycleState lifecycle;
  /** PowerManager.THERMAL_STATUS_* in effect (a headroom >= 1.0 counts as SEVERE). */
  public final int thermalStatus;
  public final TierStats[] tiers = new TierStats[Tier.values().length];
  public final long poolUsedBytes, poolCapacityBytes, snapshotRamBytes, snapshotDiskBytes;

  // The layout of valet_jni.cpp's nativeStats.
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
      tiers[t] = new TierStats(v[n], v[n + 1], v[n + 2], v[n + 3], v[n + 4], v[n + 5], v[n + 6]);
    }
    poolUsedBytes = v[n];
    poolCapacityBytes = v[n + 1];
    snapshotRamBytes = v[n + 2];
    snapshotDiskBytes = v[n + 3];
  }

  public TierStats tier(Tier t) {
    return tiers[t.ordinal()];
  }
}
