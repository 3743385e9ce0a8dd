package android.content;

/** The part of Android's class valet uses, so the binding compiles and is tested off Android. */
public abstract class BroadcastReceiver {
  public abstract void onReceive(Context context, Intent intent);
}
