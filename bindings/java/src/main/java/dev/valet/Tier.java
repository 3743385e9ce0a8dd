package dev.valet;

/** Priority tiers; lower runs first, first come first served within a tier. */
public enum Tier {
  FOREGROUND_CHAT,
  INLINE_SUGGESTION,
  BACKGROUND_SUMMARY,
  OFFLINE_INDEXING
}
