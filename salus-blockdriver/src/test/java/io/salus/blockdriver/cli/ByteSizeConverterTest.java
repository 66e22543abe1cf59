package io.salus.blockdriver.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class ByteSizeConverterTest {
  @Test
  void parsesBinaryUnits() {
    assertEquals(512, ByteSizeConverter.parse("512"));
    assertEquals(64L << 10, ByteSizeConverter.parse("64K"));
    assertEquals(1L << 30, ByteSizeConverter.parse("1G"));
    assertEquals(1L << 30, ByteSizeConverter.parse("1GiB"));
    assertEquals(3L << 20, ByteSizeConverter.parse("3mb"));
    assertEquals(2L << 40, ByteSizeConverter.parse("2T"));
  }

  @Test
  void rejectsNonsenseWithAnExample() {
    for (String bad : new String[] {"", "G", "abc", "-1G", "0", "1.5G", "99999999999T"}) {
      var e = assertThrows(CommandLine.TypeConversionException.class, () -> ByteSizeConverter.parse(bad), bad);
      assertTrue(e.getMessage().contains("bad size") && e.getMessage().contains("10G"), e.getMessage());
    }
  }
}
