package io.exalt.it;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Starts a child JVM with the Exalt agent and the test class path; used by the io.exalt.it tests. */
final class ExaltChildJvm {
    private ExaltChildJvm() {
    }

    /** The shaded agent jar: the reactor's exalt-agent/target, else the one installed in ~/.m2. */
    static Path agentJar() {
        String name = "exalt-agent-0.1.0-SNAPSHOT-agent.jar";
        String root = System.getProperty("salus.repo.root", "..");
        Path p = Paths.get(root, "exalt-agent", "target", name);
        if (Files.isRegularFile(p)) {
            return p.toAbsolutePath().normalize();
        }
        Path m2 = Paths.get(System.getProperty("user.home"), ".m2", "repository", "io", "salus", "exalt-agent", "0.1.0-SNAPSHOT", name);
        if (Files.isRegularFile(m2)) {
            return m2;
        }
        throw new IllegalStateException("Exalt agent jar not found at " + p + " or " + m2
                + "; build it with: mvn -B -pl exalt-agent install -DskipTests");
    }

    static String classPath() {
        String cp = System.getProperty("surefire.test.class.path");
        return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
    }

    /** Runs {@code mainClass args} with {@code -javaagent:jar=agentArgs}; returns {exit, output}. */
    static Object[] run(String agentArgs, String heap, long timeoutSec, Class<?> mainClass, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(System.getProperty("java.home") + "/bin/java", "-Xmx" + heap,
                "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
                "-Dlog4j.configuration=exalt-it-log4j.properties",
                "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/java.nio=ALL-UNNAMED",
                "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens", "java.base/java.util=ALL-UNNAMED",
                "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
                "-javaagent:" + agentJar() + "=" + agentArgs, "-cp", classPath(), mainClass.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.PIPE).start();
        StringBuilder out = new StringBuilder();
        Thread pump = new Thread(() -> {
            try {
                byte[] b = p.getInputStream().readAllBytes();
                synchronized (out) {
                    out.append(new String(b, StandardCharsets.UTF_8));
                }
            } catch (java.io.IOException e) {
                // process died
            }
        });
        pump.start();
        if (!p.waitFor(timeoutSec, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            pump.join(5000);
            throw new AssertionError("child JVM timed out after " + timeoutSec + " s:\n" + out);
        }
        pump.join();
        return new Object[] {p.exitValue(), out.toString()};
    }

    /** A base port such that base..base+n-1 are free on 127.0.0.1 right now. */
    static int freePortRange(int n) throws Exception {
        java.util.Random r = new java.util.Random();
        for (int attempt = 0; attempt < 100; attempt++) {
            int base = 20_000 + r.nextInt(10_000);
            boolean ok = true;
            for (int i = 0; i < n && ok; i++) {
                try (java.net.ServerSocket s = new java.net.ServerSocket(base + i, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
                    s.setReuseAddress(true);
                } catch (java.io.IOException e) {
                    ok = false;
                }
            }
            if (ok) {
                return base;
            }
        }
        throw new IllegalStateException("no free port range of " + n + " found in 20000-30000");
    }

    static long diskUsage(File dir) throws Exception {
        Process p = new ProcessBuilder("du", "-s", "-B1", dir.getPath()).start();
        String s = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        p.waitFor();
        return Long.parseLong(s.split("\\s+")[0]);
    }
}
