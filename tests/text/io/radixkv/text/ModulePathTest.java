package io.radixkv.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * io.radixkv.text works as a named module beside DJL and Jinjava as automatic modules, in a
 * fresh JVM that is given only {@code --add-modules io.radixkv.text} (no ALL-MODULE-PATH, no
 * extra --add-opens), without network where the machine allows a network namespace: tokenizing and a chat template whose functions
 * Jinjava calls reflectively.
 */
class ModulePathTest {

    static final String CHECK = """
            import io.radixkv.text.*;
            import java.nio.file.Path;
            import java.util.List;
            import java.util.Map;
            public class Check {
                public static void main(String[] args) throws Exception {
                    if (!HfTokenizer.class.getModule().isNamed()
                            || !com.hubspot.jinjava.Jinjava.class.getModule().getName().equals("jinjava")) {
                        throw new AssertionError("not on the module path: " + HfTokenizer.class.getModule());
                    }
                    try (HfTokenizer tok = HfTokenizer.load(Path.of(args[0]))) {
                        String prompt = tok.chatTemplate().orElseThrow().render(List.of(new ChatMessage("user", "Hi")), true);
                        String extra = ChatTemplate.of("{{ strftime_now('%Y') | length }}{{ messages | tojson }}", Map.of())
                                .render(List.of(new ChatMessage("user", "x")), false);
                        System.out.println(tok.encode(prompt, false).length + " " + extra);
                    }
                }
            }
            """;

    /** Whether this machine lets us run the child in a network namespace of its own (root, util-linux). */
    static boolean networkless() {
        try {
            Process p = new ProcessBuilder("unshare", "-n", "true").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Test
    void worksWithOnlyItsOwnModuleAdded(@TempDir Path tmp) throws IOException, InterruptedException {
        // Everything on the module path, as the ./radixkv launcher does (surefire keeps the jars
        // no module requires by name on the class path; its own and JUnit's stay out).
        String modulePath = System.getProperty("jdk.module.path");
        assertNotNull(modulePath, "tests run on the module path");
        for (String entry : System.getProperty("java.class.path", "").split(java.io.File.pathSeparator)) {
            String name = Path.of(entry).getFileName() == null ? "" : Path.of(entry).getFileName().toString();
            if (entry.endsWith(".jar") && !name.startsWith("surefire") && !name.startsWith("junit")
                    && !name.startsWith("opentest4j") && !name.startsWith("apiguardian") && !name.startsWith("common-")) {
                modulePath += java.io.File.pathSeparator + entry;
            }
        }
        Path src = Files.writeString(tmp.resolve("Check.java"), CHECK);
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> cmd = new java.util.ArrayList<>();
        if (networkless()) {
            cmd.addAll(List.of("unshare", "-n")); // no network at all: nothing may be downloaded
        }
        cmd.addAll(List.of(java.toString(), "--enable-native-access=ai.djl.tokenizers",
                "-DDJL_CACHE_DIR=" + System.getProperty("DJL_CACHE_DIR", tmp.resolve("djl").toString()),
                "--module-path", modulePath, "--add-modules", "io.radixkv.text", src.toString(),
                TestData.dir("qwen3").toAbsolutePath().toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "timed out");
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("9 4[{\"role\": \"user\", \"content\": \"x\"}]"), out);
    }
}
