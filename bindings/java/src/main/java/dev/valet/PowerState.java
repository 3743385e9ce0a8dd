package dev.valet;

import java.util.Objects;

/**
 * The battery, as Android reports it ({@link Valet#onPowerState}; {@link ValetPowerReceiver} reads
 * it from the broadcasts). The budget table's power column decides which tiers run on it: by
 * default chat and suggestions always, summaries not in battery saver, offline indexing neither in
 * battery saver nor on a low battery unless charging. Immutable.
 */
public final class PowerState {
  /** What a device that never reports is taken to be: charging, level unknown. Constrains nothing. */
  public static final PowerState UNKNOWN = new PowerState(true, -1, false, false);

  /** Plugged in (AC, USB, wireless). */
  public final boolean charging;
  /** 0..100, or -1 when unknown. */
  public final int batteryPercent;
  /** Battery saver is on (PowerManager.isPowerSaveMode()). */
  public final boolean powerSave;
  /** Between ACTION_BATTERY_LOW and ACTION_BATTERY_OKAY. */
  public final boolean batteryLow;

  /** @throws IllegalArgumentException for a batteryPercent outside -1..100 */
  public PowerState(boolean charging, int batteryPercent, boolean powerSave, boolean batteryLow) {
    if (batteryPercent < -1 || batteryPercent > 100) {
      throw new IllegalArgumentException("batteryPercent " + batteryPercent + " is outside -1..100");
    }
    this.charging = charging;
    this.batteryPercent = batteryPercent;
    this.powerSave = powerSave;
    this.batteryLow = batteryLow;
  }

  public PowerState withCharging(boolean value) {
    return new PowerState(value, batteryPercent, powerSave, batteryLow);
  }

  public PowerState withBatteryPercent(int value) {
    return new PowerState(charging, value, powerSave, batteryLow);
  }

  public PowerState withPowerSave(boolean value) {
    return new PowerState(charging, batteryPercent, value, batteryLow);
  }

  public PowerState withBatteryLow(boolean value) {
    return new PowerState(charging, batteryPercent, powerSave, value);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof PowerState)) return false;
    final PowerState p = (PowerState) o;
    return charging == p.charging && batteryPercent == p.batteryPercent && powerSave == p.powerSave
        && batteryLow == p.batteryLow;
  }

  @Override
  public int hashCode() {
    return Objects.hash(charging, batteryPercent, powerSave, batteryLow);
  }

  @Override
  public String toString() {
    return "PowerState{charging=" + charging + ", batteryPercent=" + batteryPercent + ", powerSave=" + powerSave
        + ", batteryLow=" + batteryLow + "}";
  }
}
