package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.lang.module.ModuleDescriptor;
import java.util.Set;
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

    @Test
    void noLoggingConfigurationShipsWithTheLibrary() {
        assertEquals(null, CORE.getClassLoader().getResource("log4j2.xml"));
    }
}
