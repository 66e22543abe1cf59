package io.salus.blockdriver.launcher;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import io.salus.blockdriver.cli.SalusCli;
import picocli.CommandLine;

/**
 * Every {@code salus …} command written in README.md and docs/*.md parses as written with the real
 * picocli command tree (options exist, positionals and required options are given, values convert),
 * so a new user can paste them. Code blocks are commands; in prose, a code span is one when it
 * carries an option. Usage synopses may mark options optional with {@code [...]}.
 */
class DocumentedCommandsTest {
  private static final Pattern SUB = Pattern.compile(
      "(?:^|[\\s`(])(?:\\./)?salus\\s+((?:up|status|volume|nbd|witness|digests|help)\\b.*)");

  static Path repoRoot() {
    Path p = Path.of("").toAbsolutePath();
    while (p != null && !Files.exists(p.resolve("README.md"))) {
      p = p.getParent();
    }
    if (p == null) {
      throw new IllegalStateException("no README.md above " + Path.of("").toAbsolutePath());
    }
    return p;
  }

  /** The documented commands of one Markdown file, as "file:line: command". */
  static List<String[]> commands(Path md) throws IOException {
    List<String> lines = Files.readAllLines(md);
    List<String[]> out = new ArrayList<>();
    boolean inCode = false;
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      if (line.strip().startsWith("```")) {
        inCode = !inCode;
        continue;
      }
      int lineNo = i + 1;
      if (inCode) {
        while (line.endsWith("\\") && i + 1 < lines.size()) {
          line = line.substring(0, line.length() - 1) + " " + lines.get(++i).strip();
        }
        // Only commands, not program output that happens to mention one (the readiness line).
        if (line.startsWith("SALUS READY")) {
          continue;
        }
        Matcher m = SUB.matcher(line);
        if (m.find()) {
          out.add(new String[] {md.getFileName() + ":" + lineNo, cut(m.group(1))});
        }
      } else {
        Matcher span = Pattern.compile("`([^`]+)`").matcher(line);
        while (span.find()) {
          // Prose names commands (`salus nbd`) as well as giving them: a span is a command to
          // run when it carries an option, and is not elided ("…").
          String text = span.group(1);
          if (!text.contains(" --") || text.contains("...") || text.contains("…")) {
            continue;
          }
          Matcher m = SUB.matcher(text);
          if (m.find() && m.start() == 0) {
            out.add(new String[] {md.getFileName() + ":" + lineNo, cut(m.group(1))});
          }
        }
      }
    }
    return out;
  }

  /** Drops shell decoration after the command: comments, separators, pipes, background. */
  private static String cut(String cmd) {
    for (String stop : new String[] {" #", ";", "&&", "|", " &", ")", "`"}) {
      int k = cmd.indexOf(stop);
      if (k >= 0) {
        cmd = cmd.substring(0, k);
      }
    }
    return cmd.replace("[", " ").replace("]", " ").strip();
  }

  static List<Path> documents() throws IOException {
    Path root = repoRoot();
    List<Path> docs = new ArrayList<>();
    docs.add(root.resolve("README.md"));
    try (Stream<Path> s = Files.list(root.resolve("docs"))) {
      s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
    }
    return docs;
  }

  @Test
  void everyDocumentedCommandParsesAsWritten() throws Exception {
    List<String> bad = new ArrayList<>();
    int checked = 0;
    for (Path md : documents()) {
      for (String[] c : commands(md)) {
        String[] args = c[1].split("\\s+");
        try {
          CommandLine.ParseResult r = SalusCli.commandLine().parseArgs(args);
          if (r.subcommand() == null) {
            bad.add(c[0] + ": `salus " + c[1] + "`: no subcommand");
          }
        } catch (CommandLine.ParameterException e) {
          bad.add(c[0] + ": `salus " + c[1] + "`: " + e.getMessage());
        }
        checked++;
      }
    }
    assertTrue(checked >= 10, "found only " + checked + " documented commands: extraction broken?");
    assertTrue(bad.isEmpty(), bad.size() + " documented command(s) do not parse:\n"
        + String.join("\n", bad));
  }

  private static final Pattern JAVA_MAIN = Pattern.compile(
      "\\bjava\\s.*?-cp\\s+'?([^'\\s]+)'?\\s.*?\\b(io\\.(?:salus|exalt)\\.[a-z0-9_.]+\\.[A-Z]\\w*)");
  private static final Pattern MODULE_TARGET = Pattern.compile("([\\w.-]+(?:/[\\w.-]+)*)/target/");
  private static final Pattern SALUS_DEP = Pattern.compile(
      "<groupId>io\\.salus</groupId>\\s*<artifactId>([\\w.-]+)</artifactId>");

  /** Module directory (relative to the root) → artifactId, from every pom.xml two levels deep. */
  private static java.util.Map<String, String> modules(Path root) throws IOException {
    java.util.Map<String, String> out = new java.util.HashMap<>();
    try (Stream<Path> s = Files.walk(root, 3)) {
      for (Path pom : s.filter(p -> p.getFileName().toString().equals("pom.xml"))
          .filter(p -> !p.getParent().equals(root) && !p.toString().contains("/target/")).toList()) {
        Matcher m = Pattern.compile("</parent>\\s*<artifactId>([\\w.-]+)</artifactId>")
            .matcher(Files.readString(pom));
        if (m.find()) {
          out.put(root.relativize(pom.getParent()).toString(), m.group(1));
        }
      }
    }
    return out;
  }

  /**
   * A documented {@code java -cp '<module>/target/…' io.salus.…Main} runs as written: the main
   * class's source exists, in that module or in a salus module it depends on directly. (After the
   * benchmarks moved into the launcher artifact, the old {@code -cp salus-blockdriver/target/…}
   * would no longer find them.)
   */
  @Test
  void everyDocumentedJavaMainClassIsOnTheClassPathItNames() throws Exception {
    Path root = repoRoot();
    java.util.Map<String, String> modules = modules(root);
    List<String> bad = new ArrayList<>();
    int checked = 0;
    for (Path md : documents()) {
      List<String> lines = Files.readAllLines(md);
      for (int i = 0; i < lines.size(); i++) {
        String line = lines.get(i);
        int lineNo = i + 1;
        while (line.endsWith("\\") && i + 1 < lines.size()) {
          line = line.substring(0, line.length() - 1) + " " + lines.get(++i).strip();
        }
        Matcher m = JAVA_MAIN.matcher(line);
        if (!m.find()) {
          continue;
        }
        String cls = m.group(2);
        String rel = cls.replace('.', '/') + ".java";
        List<String> holders = new ArrayList<>();
        for (String mod : modules.keySet()) {
          for (String src : List.of("src/main/java/", "src/test/java/")) {
            if (Files.exists(root.resolve(mod).resolve(src + rel))) {
              holders.add(mod);
            }
          }
        }
        String where = md.getFileName() + ":" + lineNo + ": " + cls;
        checked++;
        if (holders.isEmpty()) {
          bad.add(where + ": no such class in any module");
          continue;
        }
        Matcher t = MODULE_TARGET.matcher(m.group(1));
        if (!t.find() || !modules.containsKey(t.group(1))) {
          continue; // a class path relative to a module directory: only existence is checked
        }
        String named = t.group(1);
        java.util.Set<String> visible = new java.util.HashSet<>(List.of(modules.get(named)));
        Matcher d = SALUS_DEP.matcher(Files.readString(root.resolve(named).resolve("pom.xml")));
        while (d.find()) {
          visible.add(d.group(1));
        }
        if (holders.stream().noneMatch(h -> visible.contains(modules.get(h)))) {
          bad.add(where + ": lives in " + holders + ", not on the class path of " + named);
        }
      }
    }
    assertTrue(checked >= 3, "found only " + checked + " documented java main classes");
    assertTrue(bad.isEmpty(), String.join("\n", bad));
  }
}
