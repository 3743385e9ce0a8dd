package dev.valet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import android.content.BroadcastReceiver;
import android.content.Context;
import android.content.Intent;
import android.content.IntentFilter;
import android.os.BatteryManager;
import android.os.PowerManager;
import org.junit.jupiter.api.Test;

/** The battery from Android's broadcasts to the scheduler: ValetPowerReceiver and Valet.onPowerState. */
class PowerTest {
  /** A Context holding the sticky battery intent and a PowerManager whose mode the test sets. */
  static final class FakeContext extends Context {
    final PowerManager power = new PowerManager();
    Intent sticky;
    BroadcastReceiver registered;
    IntentFilter filter;

    @Override
    public Intent registerReceiver(BroadcastReceiver receiver, IntentFilter f) {
      registered = receiver;
      filter = f;
      return sticky;
    }

    @Override
    public void unregisterReceiver(BroadcastReceiver receiver) {
      assertSame(registered, receiver);
      registered = null;
    }

    @Override
    public Object getSystemService(String name) {
      return Context.POWER_SERVICE.equals(name) ? power : null;
    }
  }

  static Intent batteryChanged(int plugged, int level, int scale) {
    return new Intent(Intent.ACTION_BATTERY_CHANGED)
        .putExtra(BatteryManager.EXTRA_PLUGGED, plugged)
        .putExtra(BatteryManager.EXTRA_LEVEL, level)
        .putExtra(BatteryManager.EXTRA_SCALE, scale);
  }

  @Test
  void aStateIsCheckedAndChangedOneFieldAtATime() {
    assertThrows(IllegalArgumentException.class, () -> new PowerState(true, 101, false, false));
    assertThrows(IllegalArgumentException.class, () -> PowerState.UNKNOWN.withBatteryPercent(-2));
    final PowerState low = PowerState.UNKNOWN.withCharging(false).withBatteryLow(true).withBatteryPercent(9);
    assertEquals(new PowerState(false, 9, false, true), low);
    assertTrue(PowerState.UNKNOWN.charging);
    assertEquals(-1, PowerState.UNKNOWN.batteryPercent);
  }

  @Test
  void theBatteryChangedExtrasAndTheirAbsence() {
    final PowerState s = ValetPowerReceiver.fromBatteryChanged(PowerState.UNKNOWN, batteryChanged(0, 30, 200));
    assertEquals(new PowerState(false, 15, false, false), s);
    final Intent flagged = batteryChanged(2, 10, 100).putExtra(BatteryManager.EXTRA_BATTERY_LOW, true);
    assertEquals(new PowerState(true, 10, false, true), ValetPowerReceiver.fromBatteryChanged(s, flagged));
    // No extras at all: what was known stays.
    assertEquals(s, ValetPowerReceiver.fromBatteryChanged(s, new Intent(Intent.ACTION_BATTERY_CHANGED)));
  }

  /**
   * Registered on a low battery (not charging), the indexer waits while the chat runs; the
   * charger lets it finish. Battery saver then holds summaries, and its end lets them run.
   */
  @Test
  void theReceiverGatesTheTiersFromTheBroadcasts() throws Exception {
    final Valet valet = Valet.create(TestModel.options());
    try {
      final FakeContext context = new FakeContext();
      context.sticky = batteryChanged(0, 12, 100).putExtra(BatteryManager.EXTRA_BATTERY_LOW, true);
      final ValetPowerReceiver receiver = new ValetPowerReceiver(valet);
      receiver.register(context);
      assertSame(receiver, context.registered);
      assertEquals(4, context.filter.countActions());
      assertTrue(context.filter.hasAction(PowerManager.ACTION_POWER_SAVE_MODE_CHANGED));
      assertEquals(new PowerState(false, 12, false, true), receiver.state());

      final Task indexing = valet.submit(Tier.OFFLINE_INDEXING, "Held back", 6, null);
      assertEquals(TaskState.DONE, valet.submit(Tier.FOREGROUND_CHAT, "Hi", 2, null).result().get().state());
      assertEquals(TaskState.QUEUED, valet.info(indexing).state());
      receiver.onReceive(context, batteryChanged(1, 12, 100));  // plugged in: still low, but charging
      assertEquals(6, indexing.result().get().tokens());

      context.power.setPowerSaveModeForTesting(true);
      receiver.onReceive(context, new Intent(PowerManager.ACTION_POWER_SAVE_MODE_CHANGED));
      assertTrue(receiver.state().powerSave);
      final Task summary = valet.submit(Tier.BACKGROUND_SUMMARY, "Later", 3, null);
      assertEquals(TaskState.DONE, valet.submit(Tier.INLINE_SUGGESTION, "Now", 2, null).result().get().state());
      assertEquals(TaskState.QUEUED, valet.info(summary).state());
      context.power.setPowerSaveModeForTesting(false);
      receiver.onReceive(context, new Intent(PowerManager.ACTION_POWER_SAVE_MODE_CHANGED));
      assertEquals(TaskState.DONE, summary.result().get().state());

      receiver.onReceive(context, new Intent(Intent.ACTION_BATTERY_OKAY));
      assertFalse(receiver.state().batteryLow);
      receiver.onReceive(context, new Intent(Intent.ACTION_BATTERY_LOW));
      assertTrue(receiver.state().batteryLow);
      receiver.unregister(context);
    } finally {
      valet.close();
    }
    valet.onPowerState(PowerState.UNKNOWN);  // after close(): nothing
  }
}
