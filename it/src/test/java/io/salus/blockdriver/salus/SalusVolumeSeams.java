package io.salus.blockdriver.salus;

/**
 * Test access to {@link SalusVolume}'s package-private seams. Not a mock: it makes a real SalusVolume behave as a
 * writer that missed the loss of its lease (a paused process, a partitioned client), which cannot be produced on
 * purpose otherwise: the volume checks its lease before every operation.
 */
public final class SalusVolumeSeams {
  private SalusVolumeSeams() {
  }

  /** From now on {@code v} keeps sending writes after its lease is lost. */
  public static void ignoreLeaseLoss(SalusVolume v) {
    v.ignoreLeaseLossForTest();
  }
}
