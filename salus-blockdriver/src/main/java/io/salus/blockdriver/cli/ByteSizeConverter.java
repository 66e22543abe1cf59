package io.salus.blockdriver.cli;

import java.util.Locale;
import picocli.CommandLine;

/**
 * Parses sizes such as {@code 512}, {@code 64K}, {@code 1G}, {@code 1GiB} (binary units) for
 * picocli options.
 */
public final class ByteSizeConverter implements CommandLine.ITypeConverter<Long> {
  @Override
  public Long convert(String value) {
    return parse(value);
  }

  public static long parse(String value) {
    String v = value.trim().toUpperCase(Locale.ROOT);
    if (v.endsWith("IB")) {
      v = v.substring(0, v.length() - 2);
    } else if (v.endsWith("B")) {
      v = v.substring(0, v.length() - 1);
    }
    long mult = 1;
    if (!v.isEmpty()) {
      switch (v.charAt(v.length() - 1)) {
        case 'K' -> mult = 1L << 10;
        case 'M' -> mult = 1L << 20;
        case 'G' -> mult = 1L << 30;
        case 'T' -> mult = 1L << 40;
        default -> mult = 1;
      }
      if (mult != 1) {
        v = v.substring(0, v.length() - 1);
      }
    }
    try {
      long n = Long.parseLong(v.trim());
      if (n <= 0) {
        throw new NumberFormatException();
      }
      return Math.multiplyExact(n, mult);
    } catch (NumberFormatException | ArithmeticException e) {
      throw new CommandLine.TypeConversionException(badSize(value));
    }
  }

  /** The one wording of a bad size, shared by every command that takes {@code --size}. */
  static String badSize(String value) {
    return "bad size '" + value + "': give a positive byte count, optionally with K, M, G or T"
        + " (e.g. 64M, 10G)";
  }

  /** Refuses a size that is not a whole number of blocks, in the same words everywhere. */
  public static void checkMultiple(long bytes, int blockSize) {
    if (bytes % blockSize != 0) {
      throw new IllegalArgumentException("bad size: " + bytes + " bytes is not a multiple of the"
          + " block size (" + blockSize + " bytes); use e.g. 1G or 512M");
    }
  }
}
