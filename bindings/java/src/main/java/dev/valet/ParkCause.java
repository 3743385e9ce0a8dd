package dev.valet;

/** Why a PARKED task waits, in valet.h's order (valet_park_cause). */
public enum ParkCause {
  /** Not parked. */
  NONE,
  /** A higher tier runs. */
  HIGHER_TIER,
  /** A task of its tier takes its turn. */
  TURN,
  /** Its tier's lifecycle or thermal budget is spent. */
  BUDGET,
  /** Memory pressure, a trim, or the app's destruction. */
  MEMORY,
  /** Its listener fell behind. */
  CONSUMER,
  /**
   * Its journal cannot be written (a full or failing disk): it neither goes on nor ends until a
   * write succeeds again ({@link Valet#retryJournals()}).
   */
  JOURNAL_IO,
  /** Its tier waits for the battery: charging, not low, or battery saver off ({@link PowerState}). */
  POWER;

  static ParkCause of(int value) {
    return values()[value];
  }
}
