package dev.valet;

/** Progress of {@link Valet#createAsync}, on its executor, in order. */
@FunctionalInterface
public interface LoadListener {
  /** Each stage's start (0 of 0), and packing's bytes done of all. */
  void onProgress(LoadStage stage, long done, long total);
}
