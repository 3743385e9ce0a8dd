package android.os;

/** The part of Android's class valet uses; tests set the mode. */
public class PowerManager {
  public static final String ACTION_POWER_SAVE_MODE_CHANGED = "android.os.action.POWER_SAVE_MODE_CHANGED";

  private volatile boolean powerSave;

  public boolean isPowerSaveMode() {
    return powerSave;
  }

  public void setPowerSaveModeForTesting(boolean value) {
    powerSave = value;
  }
}
