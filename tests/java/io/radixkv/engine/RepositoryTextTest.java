package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The repository speaks of itself only: no tracked text file narrates how the work went
 * (working periods, ordinal rounds) or cites documents a reader does not have (seed documents, issue
 * or defect numbers). Fails listing every offending file:line.
 */
class RepositoryTextTest {
    /** Case-insensitive; each names what it rejects. */
    static final Map<String, Pattern> RULES = Map.of(
            "a working period", Pattern.compile("\\bsess" + "ions?\\b", Pattern.CASE_INSENSITIVE),
            "a seed document", Pattern.compile("\\bseeds? ?0\\d\\d\\b", Pattern.CASE_INSENSITIVE),
            "an issue or defect number", Pattern.compile("\\b(issue|defect)s? #?\\d+\\b", Pattern.CASE_INSENSITIVE),
            "ordinal narration", Pattern.compile("\\b(tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth"
                    + "|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth"
                    + "|(twenty|thirty)-(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth))\\b",
                    Pattern.CASE_INSENSITIVE));

    /**
     * Files the rules do not apply to, each with its reason. This test itself spells the
     * patterns out.
     */
    static final Set<String> ALLOWED_FILES = Set.of("tests/java/io/radixkv/engine/RepositoryTextTest.java");

    /** Without git: directories that hold no tracked text (build output, generated bindings). */
    private static final Set<String> SKIPPED_DIRS = Set.of("build", "target", "node_modules", ".git");
    private static final String GENERATED = "bindings/src";

    @Test
    void noNarrationOrUnavailableReferences() throws IOException {
        Path root = root();
        List<String> files = trackedFiles(root);
        assertTrue(files.size() > 100, "only " + files.size() + " files found under " + root);
        List<String> hits = new ArrayList<>();
        for (String f : files) {
            if (ALLOWED_FILES.contains(f) || f.startsWith(GENERATED + "/")) {
                continue;
            }
            String text = text(root.resolve(f));
            if (text == null) {
                continue; // binary
            }
            String[] lines = text.split("\n", -1);
            for (int i = 0; i < lines.length; i++) {
                for (Map.Entry<String, Pattern> rule : RULES.entrySet()) {
                    if (rule.getValue().matcher(lines[i]).find()) {
                        hits.add(f + ":" + (i + 1) + " (" + rule.getKey() + "): " + lines[i].strip());
                        break;
                    }
                }
            }
        }
        assertTrue(hits.isEmpty(), hits.size() + " lines narrate the work or cite documents the repository does"
                + " not have; state the rule itself:\n  " + String.join("\n  ", hits));
    }

    /** The repository root: the nearest directory up from here holding run-tests and pom.xml. */
    static Path root() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("run-tests")) && Files.isRegularFile(p.resolve("pom.xml"))) {
                return p;
            }
        }
        throw new AssertionError("no repository root (run-tests and pom.xml) above " + Path.of("").toAbsolutePath());
    }

    /** {@code git ls-files} where git works; otherwise every file, less build output and generated code. */
    static List<String> trackedFiles(Path root) throws IOException {
        try {
            Process git = new ProcessBuilder("git", "-C", root.toString(), "ls-files", "-z")
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            byte[] out;
            try (InputStream in = git.getInputStream()) {
                out = in.readAllBytes();
            }
            if (git.waitFor(60, TimeUnit.SECONDS) && git.exitValue() == 0 && out.length > 0) {
                List<String> files = new ArrayList<>();
                for (String f : new String(out, StandardCharsets.UTF_8).split("\0")) {
                    if (!f.isEmpty() && Files.isRegularFile(root.resolve(f))) {
                        files.add(f);
                    }
                }
                return files;
            }
        } catch (IOException e) {
            // no git: walk the tree
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while listing files", e);
        }
        try (Stream<Path> walk = Files.walk(root)) {
            return walk.filter(Files::isRegularFile)
                    .map(p -> root.relativize(p).toString().replace('\\', '/'))
                    .filter(f -> !f.startsWith(GENERATED + "/"))
                    .filter(f -> Stream.of(f.split("/")).noneMatch(SKIPPED_DIRS::contains))
                    .toList();
        }
    }

    /** The file as UTF-8 text, or null when it holds a NUL byte (binary). */
    private static String text(Path p) throws IOException {
        byte[] b = Files.readAllBytes(p);
        for (byte x : b) {
            if (x == 0) {
                return null;
            }
        }
        return new String(b, StandardCharsets.UTF_8);
    }
}
