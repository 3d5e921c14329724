package io.radixkv.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The README's library example is this module's program, shown verbatim, and the command the
 * README gives runs it on the module path (native libraries extracted from the core jar).
 */
class GenerateExampleIT {
    private static final Path ROOT = Path.of(System.getProperty("radixkv.root", "../..")).toAbsolutePath().normalize();
    private static final Path SOURCE = ROOT.resolve(
            "examples/library/src/main/java/io/radixkv/example/GenerateExample.java");

    private static String readme() throws IOException {
        return Files.readString(ROOT.resolve("README.md"));
    }

    @Test
    void readmeShowsTheExampleVerbatim() throws IOException {
        String src = Files.readString(SOURCE);
        assertTrue(readme().contains("```java\n" + src + "```"),
                "README.md must show " + SOURCE + " verbatim in a ```java block");
        String moduleInfo = Files.readString(ROOT.resolve("examples/library/src/main/java/module-info.java"));
        assertTrue(readme().contains(moduleInfo), "README.md must show the example's module-info.java verbatim");
    }

    @Test
    void readmeCommandRunsTheExample() throws Exception {
        Matcher m = Pattern.compile("(?m)^java (--enable-native-access=io\\.radixkv --module-path \\S+ -m \\S+)$")
                .matcher(readme());
        assertTrue(m.find(), "README.md must give the `java --enable-native-access=io.radixkv --module-path ... -m ...` line");
        List<String> cmd = new ArrayList<>();
        cmd.add(System.getProperty("radixkv.java", "java"));
        cmd.addAll(Arrays.asList(m.group(1).split(" ")));
        Process p = new ProcessBuilder(cmd).directory(ROOT.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "example timed out: " + out);
        assertEquals(0, p.exitValue(), "example failed:\n" + out);

        Pattern line = Pattern.compile("(?m)^(first|second): tokens (\\[[^]]*]), finish (\\w+), cached prompt tokens (\\d+) of 64$");
        Matcher lm = line.matcher(out);
        assertTrue(lm.find(), out);
        String firstTokens = lm.group(2);
        assertEquals("0", lm.group(4), "nothing is cached before the first request:\n" + out);
        assertTrue(lm.find(), out);
        assertEquals("second", lm.group(1));
        assertEquals(firstTokens, lm.group(2), "greedy decoding of the same prompt gives the same tokens:\n" + out);
        assertTrue(Integer.parseInt(lm.group(4)) >= 48, "the second request reuses the cached prefix:\n" + out);
        assertEquals(8, firstTokens.split(",").length, out);
    }
}
