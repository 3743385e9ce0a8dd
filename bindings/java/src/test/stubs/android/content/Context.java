package android.content;

/** The part of Android's class valet uses; tests subclass it. */
public abstract class Context {
  public static final String POWER_SERVICE = "power";

  public abstract Intent registerReceiver(BroadcastReceiver receiver, IntentFilter filter);

  public abstract void unregisterReceiver(BroadcastReceiver receiver);

  public abstract Object getSystemService(String name);
}
