package android.content;

import java.util.HashMap;
import java.util.Map;

/** The part of Android's class valet uses (an action and int and boolean extras). */
public class Intent {
  public static final String ACTION_BATTERY_CHANGED = "android.intent.action.BATTERY_CHANGED";
  public static final String ACTION_BATTERY_LOW = "android.intent.action.BATTERY_LOW";
  public static final String ACTION_BATTERY_OKAY = "android.intent.action.BATTERY_OKAY";

  private final String action;
  private final Map<String, Object> extras = new HashMap<>();

  public Intent(String action) {
    this.action = action;
  }

  public String getAction() {
    return action;
  }

  public Intent putExtra(String name, int value) {
    extras.put(name, value);
    return this;
  }

  public Intent putExtra(String name, boolean value) {
    extras.put(name, value);
    return this;
  }

  public int getIntExtra(String name, int defaultValue) {
    final Object v = extras.get(name);
    return v instanceof Integer ? (Integer) v : defaultValue;
  }

  public boolean getBooleanExtra(String name, boolean defaultValue) {
    final Object v = extras.get(name);
    return v instanceof Boolean ? (Boolean) v : defaultValue;
  }
}
