package io.radixkv.engine;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The core module's package graph, read from its compiled classes (tests excluded). Each package
 * may depend only on the radixkv packages listed for it in {@link #ALLOWED}:
 *
 * <pre>
 * engine            -> sched, model, cache, paging, kernels, kernels.select, platform, structured
 * sched             -> cache, paging
 * model             -> checkpoint, checkpoint.gguf, kernels, platform
 * checkpoint.gguf   -> checkpoint
 * checkpoint        -> kernels, platform, quant
 * paging            -> kernels
 * cache             -> (nothing)
 * kernels.select    -> kernels, kernels.cpu, kernels.cuda, kernels.reference
 * kernels.cuda      -> kernels, kernels.cpu (libradixkv's loader and sampler), platform, bindings
 * kernels.cpu       -> kernels, platform, bindings
 * kernels.reference -> kernels, platform
 * kernels           -> platform
 * quant             -> (nothing)
 * structured        -> (nothing)
 * platform          -> (nothing)
 * </pre>
 *
 * So nothing below the engine depends on it; cache, paging and sched know neither the model nor
 * any kernel implementation; only kernels.cpu and kernels.cuda touch the generated bindings; and
 * the graph has no cycles.
 */
class PackageDependenciesTest {
    private static final String ROOT = "io.radixkv";

    /** Package (relative to io.radixkv) -> the radixkv packages it may use besides itself. */
    static final Map<String, Set<String>> ALLOWED = allowed();

    private static Map<String, Set<String>> allowed() {
        Map<String, Set<String>> m = new LinkedHashMap<>();
        m.put("engine", Set.of("sched", "model", "cache", "paging", "kernels", "kernels.select", "platform",
                "structured", "lora"));
        m.put("lora", Set.of("checkpoint", "kernels", "model"));
        m.put("sched", Set.of("cache", "paging"));
        m.put("model", Set.of("checkpoint", "checkpoint.gguf", "kernels", "platform", "quant"));
        m.put("checkpoint.gguf", Set.of("checkpoint"));
        m.put("checkpoint", Set.of("kernels", "platform", "quant"));
        m.put("paging", Set.of("kernels"));
        m.put("cache", Set.of());
        m.put("kernels.select", Set.of("kernels", "kernels.cpu", "kernels.cuda", "kernels.reference"));
        m.put("kernels.cuda", Set.of("kernels", "kernels.cpu", "platform", "bindings", "bindings.cuda"));
        m.put("kernels.cpu", Set.of("kernels", "platform", "bindings", "quant"));
        m.put("kernels.reference", Set.of("kernels", "platform"));
        m.put("kernels", Set.of("platform", "quant"));
        m.put("quant", Set.of());
        m.put("structured", Set.of());
        m.put("platform", Set.of());
        return m;
    }

    private static final JavaClasses CORE = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages(ROOT);

    /** Every radixkv package a class of {@code pkg} uses that {@link #ALLOWED} does not list. */
    static List<String> violations(JavaClasses classes) {
        List<String> out = new ArrayList<>();
        for (JavaClass c : classes) {
            String pkg = relative(c.getPackageName());
            if (pkg == null || pkg.startsWith("bindings")) {
                continue; // generated code
            }
            Set<String> allowed = ALLOWED.get(pkg);
            if (allowed == null) {
                out.add(c.getName() + ": package " + pkg + " has no rule in PackageDependenciesTest.ALLOWED");
                continue;
            }
            Set<String> bad = new TreeSet<>();
            c.getDirectDependenciesFromSelf().forEach(d -> {
                String target = relative(d.getTargetClass().getPackageName());
                if (target != null && !target.equals(pkg) && !allowed.contains(target)) {
                    bad.add(target + " (" + d.getTargetClass().getSimpleName() + ")");
                }
            });
            if (!bad.isEmpty()) {
                out.add(c.getName() + " -> " + bad);
            }
        }
        return out;
    }

    private static String relative(String pkg) {
        if (pkg.equals(ROOT)) {
            return "";
        }
        return pkg.startsWith(ROOT + ".") ? pkg.substring(ROOT.length() + 1) : null;
    }

    @Test
    void everyPackageUsesOnlyItsAllowedPackages() {
        assertTrue(CORE.size() > 100, "only " + CORE.size() + " classes imported: the scan found no core classes");
        List<String> v = violations(CORE);
        assertTrue(v.isEmpty(), "package dependencies outside the allowed graph:\n  " + String.join("\n  ", v));
    }

    @Test
    void everyCorePackageHasARule() {
        Set<String> packages = CORE.stream().map(c -> relative(c.getPackageName()))
                .filter(p -> p != null && !p.startsWith("bindings"))
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(ALLOWED.keySet()), packages);
    }

    @Test
    void noCycles() {
        ArchRule rule = slices().matching(ROOT + ".(**)").should().beFreeOfCycles();
        rule.check(CORE);
    }

    @Test
    void onlyTheNativeBackendsTouchTheBindings() {
        ArchRule rule = noClasses().that().resideOutsideOfPackages(ROOT + ".kernels.cpu", ROOT + ".kernels.cuda",
                        ROOT + ".bindings..")
                .should().dependOnClassesThat().resideInAPackage(ROOT + ".bindings..");
        rule.check(CORE);
    }

    @Test
    void theInterfaceLayerNamesNoImplementation() {
        ArchRule rule = classes().that().resideInAPackage(ROOT + ".kernels")
                .should().onlyDependOnClassesThat().resideOutsideOfPackages(ROOT + ".kernels.cpu",
                        ROOT + ".kernels.cuda", ROOT + ".kernels.reference", ROOT + ".kernels.select");
        rule.check(CORE);
    }
}
