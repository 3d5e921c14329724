package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.lang.module.ModuleDescriptor;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The core library stays light: no CLI, plotting, HTTP or logging back-end dependency, no logging configuration. */
class CoreModuleDependenciesTest {
    private static final Module CORE = Engine.class.getModule();

    @Test
    void coreRequiresOnlyTheLog4jApiAndJackson() {
        ModuleDescriptor d = CORE.getDescriptor();
        assertEquals("io.radixkv", d.name());
        Set<String> requires = d.requires().stream().map(ModuleDescriptor.Requires::name)
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(Set.of("java.base", "org.apache.logging.log4j", "com.fasterxml.jackson.databind")),
                requires);
    }

    @Test
    void generatedBindingsAreInternal() {
        assertFalse(CORE.getDescriptor().exports().stream().anyMatch(e -> e.source().startsWith("io.radixkv.bindings")));
    }

    /**
     * The kernel implementations are internal: only the cli sees kernels.cpu (libradixkv's build and
     * baselines). Only the server sees the GGUF reader (it rebuilds a GGUF file's tokenizer from the
     * metadata).
     */
    @Test
    void onlyTheInterfaceLayerOfTheKernelsIsExported() {
        Set<String> open = new TreeSet<>();
        Map<String, Set<String>> qualified = new TreeMap<>();
        for (ModuleDescriptor.Exports e : CORE.getDescriptor().exports()) {
            if (e.isQualified()) {
                qualified.put(e.source(), e.targets());
            } else {
                open.add(e.source());
            }
        }
        assertEquals(new TreeSet<>(Set.of("io.radixkv.kernels", "io.radixkv.kernels.select", "io.radixkv.platform",
                "io.radixkv.paging", "io.radixkv.cache", "io.radixkv.sched", "io.radixkv.engine",
                "io.radixkv.checkpoint", "io.radixkv.model", "io.radixkv.structured")), open);
        assertEquals(Map.of("io.radixkv.kernels.cpu", Set.of("io.radixkv.cli"),
                "io.radixkv.checkpoint.gguf", Set.of("io.radixkv.server")), qualified);
    }

    @Test
    void noLoggingConfigurationShipsWithTheLibrary() {
        assertEquals(null, CORE.getClassLoader().getResource("log4j2.xml"));
    }
}
