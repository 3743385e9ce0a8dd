package android.os;

/** The constants of Android's class valet uses. */
public class BatteryManager {
  public static final String EXTRA_PLUGGED = "plugged";
  public static final String EXTRA_LEVEL = "level";
  public static final String EXTRA_SCALE = "scale";
  public static final String EXTRA_BATTERY_LOW = "battery_low";
}
