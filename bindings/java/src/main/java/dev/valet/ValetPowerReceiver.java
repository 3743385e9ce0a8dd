package dev.valet;

import android.content.BroadcastReceiver;
import android.content.Context;
import android.content.Intent;
import android.content.IntentFilter;
import android.os.BatteryManager;
import android.os.PowerManager;

/**
 * Forwards the battery to a {@link Valet} from the broadcasts Android sends, no polling:
 * ACTION_BATTERY_CHANGED (charging, level; sticky, so registering reads the current state),
 * ACTION_POWER_SAVE_MODE_CHANGED and ACTION_BATTERY_LOW / _OKAY. Register it right after the Valet
 * is created and before {@link Valet#recover}, so recovered durable tasks wait for the battery as
 * new ones do:
 *
 * <pre>{@code
 * ValetPowerReceiver power = new ValetPowerReceiver(valet);
 * power.register(context);   // sends the current state at once
 * ...
 * power.unregister(context); // before valet.close()
 * }</pre>
 */
public final class ValetPowerReceiver extends BroadcastReceiver {
  private final Valet valet;
  private PowerState state = PowerState.UNKNOWN; // guarded by this

  public ValetPowerReceiver(Valet valet) {
    this.valet = valet;
  }

  /** Registers for the four broadcasts and sends the battery as it is now. */
  public void register(Context context) {
    final IntentFilter filter = new IntentFilter();
    filter.addAction(Intent.ACTION_BATTERY_CHANGED);
    filter.addAction(PowerManager.ACTION_POWER_SAVE_MODE_CHANGED);
    filter.addAction(Intent.ACTION_BATTERY_LOW);
    filter.addAction(Intent.ACTION_BATTERY_OKAY);
    final Intent battery = context.registerReceiver(this, filter);
    final PowerManager power = (PowerManager) context.getSystemService(Context.POWER_SERVICE);
    synchronized (this) {
      state = state.withPowerSave(power != null && power.isPowerSaveMode());
      if (battery != null) state = fromBatteryChanged(state, battery);
    }
    send();
  }

  public void unregister(Context context) {
    context.unregisterReceiver(this);
  }

  /** The state last sent to the Valet. */
  public synchronized PowerState state() {
    return state;
  }

  @Override
  public void onReceive(Context context, Intent intent) {
    final String action = intent.getAction();
    if (action == null) return;
    synchronized (this) {
      switch (action) {
        case Intent.ACTION_BATTERY_CHANGED:
          state = fromBatteryChanged(state, intent);
          break;
        case PowerManager.ACTION_POWER_SAVE_MODE_CHANGED:
          final PowerManager power = (PowerManager) context.getSystemService(Context.POWER_SERVICE);
          state = state.withPowerSave(power != null && power.isPowerSaveMode());
          break;
        case Intent.ACTION_BATTERY_LOW:
          state = state.withBatteryLow(true);
          break;
        case Intent.ACTION_BATTERY_OKAY:
          state = state.withBatteryLow(false);
          break;
        default:
          return;
      }
    }
    send();
  }

  /**
   * ACTION_BATTERY_CHANGED's extras over the last state: EXTRA_PLUGGED (0: on battery), EXTRA_LEVEL of
   * EXTRA_SCALE, and EXTRA_BATTERY_LOW where the platform has it (API 28); an extra that is missing
   * keeps what was known.
   */
  static PowerState fromBatteryChanged(PowerState last, Intent intent) {
    PowerState next = last;
    final int plugged = intent.getIntExtra(BatteryManager.EXTRA_PLUGGED, -1);
    if (plugged >= 0) next = next.withCharging(plugged != 0);
    final int level = intent.getIntExtra(BatteryManager.EXTRA_LEVEL, -1);
    final int scale = intent.getIntExtra(BatteryManager.EXTRA_SCALE, -1);
    if (level >= 0 && scale > 0 && level <= scale) next = next.withBatteryPercent(Math.round(100.0f * level / scale));
    return next.withBatteryLow(intent.getBooleanExtra(BatteryManager.EXTRA_BATTERY_LOW, next.batteryLow));
  }

  private void send() {
    valet.onPowerState(state());
  }
}
