package io.radixkv.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.bindings.radixkv_bench_h;
import io.radixkv.bindings.radixkv_h;
import java.io.IOException;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.PaddingLayout;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The committed jextract bindings agree with their headers, without needing jextract:
 * radixkv_h with native/include/radixkv.h and radixkv_bench_h with radixkv_bench.h. Every
 * RKV_API function has a static method of the same name with the mapped parameter and return
 * types (int32_t/int -> int, int64_t -> long, float, double, any pointer -> MemorySegment), every
 * rkv_* binding is still in its header, every {@code #define RKV_*} integer constant has the same
 * value, and every params struct has a class with the header's fields in the header's order.
 */
class BindingsDriftTest {
    /** Surefire runs in java/; fall back to the repository root for IDE runs. */
    static Path header(String name) {
        for (String dir : new String[] {"../native/include/", "native/include/"}) {
            Path path = Path.of(dir + name);
            if (Files.isRegularFile(path)) {
                return path;
            }
        }
        throw new AssertionError(name + " not found from " + Path.of("").toAbsolutePath());
    }

    static Path header() {
        return header("radixkv.h");
    }

    static Path benchHeader() {
        return header("radixkv_bench.h");
    }

    static String stripComments(String s) {
        return s.replaceAll("(?s)/\\*.*?\\*/", " ").replaceAll("//[^\n]*", " ");
    }

    static Class<?> javaType(String cType) {
        String t = cType.replace("const", " ").trim().replaceAll("\\s+", " ");
        if (t.contains("*")) {
            return MemorySegment.class;
        }
        return switch (t) {
            case "int", "int32_t" -> int.class;
            case "int64_t" -> long.class;
            case "float" -> float.class;
            case "double" -> double.class;
            case "void" -> void.class;
            default -> throw new AssertionError("no mapping for C type '" + cType + "'");
        };
    }

    /** C parameter "const int64_t* slot_mapping" -> its type (the declarator without the name). */
    static String paramType(String param) {
        String p = param.trim();
        Matcher m = Pattern.compile("^(.*?)([A-Za-z_]\\w*)$").matcher(p);
        if (!m.matches() || m.group(1).isBlank()) {
            throw new AssertionError("cannot parse parameter '" + param + "'");
        }
        return m.group(1);
    }

    /** name -> [return type, parameter types...] for every RKV_API function of the header. */
    static Map<String, List<Class<?>>> headerFunctions(String src) {
        String code = stripComments(src).replaceAll("(?m)^\\s*#.*$", " ").replaceAll("\\s+", " ");
        Matcher m = Pattern.compile("RKV_API ([\\w\\s*]+?)\\s*\\b(rkv_\\w+)\\s*\\(([^)]*)\\)\\s*;").matcher(code);
        Map<String, List<Class<?>>> fns = new TreeMap<>();
        while (m.find()) {
            List<Class<?>> sig = new ArrayList<>();
            sig.add(javaType(m.group(1)));
            String params = m.group(3).trim();
            if (!params.equals("void") && !params.isEmpty()) {
                for (String p : params.split(",")) {
                    sig.add(javaType(paramType(p)));
                }
            }
            fns.put(m.group(2), sig);
        }
        return fns;
    }

    static Map<String, List<Class<?>>> bindingFunctions() {
        return bindingFunctions(radixkv_h.class);
    }

    static Map<String, List<Class<?>>> bindingFunctions(Class<?> headerClass) {
        Map<String, List<Class<?>>> fns = new TreeMap<>();
        for (Class<?> c = headerClass; c != null && c != Object.class; c = c.getSuperclass()) {
            for (Method method : c.getDeclaredMethods()) {
                String n = method.getName();
                if (!n.startsWith("rkv_") || n.contains("$") || !Modifier.isStatic(method.getModifiers())
                        || !Modifier.isPublic(method.getModifiers())) {
                    continue;
                }
                List<Class<?>> sig = new ArrayList<>();
                sig.add(method.getReturnType());
                sig.addAll(Arrays.asList(method.getParameterTypes()));
                List<Class<?>> prev = fns.put(n, sig);
                assertTrue(prev == null, "overloaded binding " + n);
            }
        }
        return fns;
    }

    @Test
    void everyHeaderFunctionHasAMatchingBinding() throws IOException {
        Map<String, List<Class<?>>> header = headerFunctions(Files.readString(header()));
        assertTrue(header.size() > 20, "parsed only " + header.size() + " functions: " + header.keySet());
        assertTrue(header.containsKey("rkv_reshape_and_cache") && header.containsKey("rkv_cuda_copy_blocks"));
        assertMatching(header, bindingFunctions(radixkv_h.class), "radixkv_h");
    }

    @Test
    void everyBenchHeaderFunctionHasAMatchingBinding() throws IOException {
        Map<String, List<Class<?>>> header = headerFunctions(Files.readString(benchHeader()));
        assertTrue(header.containsKey("rkv_bench_read") && header.containsKey("rkv_bench_fma_peak"), header.keySet()::toString);
        assertMatching(header, bindingFunctions(radixkv_bench_h.class), "radixkv_bench_h");
    }

    static void assertMatching(Map<String, List<Class<?>>> header, Map<String, List<Class<?>>> bindings, String cls) {
        for (var e : header.entrySet()) {
            assertTrue(bindings.containsKey(e.getKey()), cls + " has no binding for " + e.getKey() + "; regenerate");
            assertEquals(e.getValue(), bindings.get(e.getKey()), "signature of " + e.getKey() + " (return, params)");
        }
        for (String name : bindings.keySet()) {
            assertTrue(header.containsKey(name), "binding " + cls + "." + name
                    + " is not declared in its header any more; regenerate");
        }
    }

    @Test
    void noStaleBindings() throws IOException {
        Map<String, List<Class<?>>> header = headerFunctions(Files.readString(header()));
        for (String name : bindingFunctions().keySet()) {
            assertTrue(header.containsKey(name), "binding " + name + " is not declared in radixkv.h any more; regenerate");
        }
        Map<String, List<Class<?>>> bench = headerFunctions(Files.readString(benchHeader()));
        assertTrue(header.keySet().stream().noneMatch(bench::containsKey), "a function declared in both headers");
    }

    /** struct name -> its field names in order, for every {@code typedef struct x {...} x;} of the header. */
    static Map<String, List<String>> headerStructs(String src) {
        String code = stripComments(src).replaceAll("\\s+", " ");
        Matcher m = Pattern.compile("typedef struct (\\w+) \\{([^}]*)\\} \\1;").matcher(code);
        Map<String, List<String>> structs = new TreeMap<>();
        while (m.find()) {
            List<String> fields = new ArrayList<>();
            for (String decl : m.group(2).split(";")) {
                if (!decl.isBlank()) {
                    Matcher name = Pattern.compile("([A-Za-z_]\\w*)\\s*$").matcher(decl.trim());
                    assertTrue(name.find(), "cannot parse field '" + decl + "'");
                    fields.add(name.group(1));
                }
            }
            structs.put(m.group(1), fields);
        }
        return structs;
    }

    @Test
    void structsMatch() throws Exception {
        Map<String, List<String>> structs = headerStructs(Files.readString(header()));
        assertTrue(structs.containsKey("rkv_decode_params") && structs.containsKey("rkv_prefill_params"),
                structs.keySet()::toString);
        for (var e : structs.entrySet()) {
            Class<?> c = Class.forName("io.radixkv.bindings." + e.getKey());
            GroupLayout layout = (GroupLayout) c.getMethod("layout").invoke(null);
            List<String> fields = layout.memberLayouts().stream().filter(l -> !(l instanceof PaddingLayout))
                    .map(l -> l.name().orElseThrow()).toList();
            assertEquals(e.getValue(), fields, "fields of " + e.getKey() + "; regenerate");
        }
        // the parser sees a changed field list
        Map<String, List<String>> drifted = headerStructs("typedef struct rkv_x { int32_t a; const void* b; } rkv_x;");
        assertEquals(Map.of("rkv_x", List.of("a", "b")), drifted);
    }

    @Test
    void constantsMatch() throws Exception {
        String code = stripComments(Files.readString(header()));
        Matcher m = Pattern.compile("(?m)^\\s*#define (RKV_\\w+) \\(?(-?\\d+)\\)?\\s*$").matcher(code);
        int n = 0;
        while (m.find()) {
            Method getter = radixkv_h.class.getMethod(m.group(1));
            assertEquals(Integer.parseInt(m.group(2)), ((Number) getter.invoke(null)).intValue(), m.group(1));
            n++;
        }
        assertTrue(n >= 12, "parsed only " + n + " constants");
    }

    @Test
    void parserCatchesDrift() {
        // The checks above can fail: a changed parameter type or an extra function is detected.
        String drifted = "RKV_API int rkv_fp8_quantize(const float* src, uint8_t* dst, int32_t n, int32_t fp8_dtype, float scale);\n"
                + "RKV_API int rkv_new_kernel(void);";
        Map<String, List<Class<?>>> h = headerFunctions(drifted);
        assertTrue(!h.get("rkv_fp8_quantize").equals(bindingFunctions().get("rkv_fp8_quantize")));
        assertTrue(!bindingFunctions().containsKey("rkv_new_kernel"));
        assertEquals(List.of(int.class), h.get("rkv_new_kernel"));
    }

    /** DType writes the RKV_DTYPE_* codes out (the interface layer loads no bindings): they must stay the header's. */
    @Test
    void dtypeCodesAreTheHeaders() {
        assertEquals(radixkv_h.RKV_DTYPE_F32(), DType.F32.code());
        assertEquals(radixkv_h.RKV_DTYPE_F16(), DType.F16.code());
        assertEquals(radixkv_h.RKV_DTYPE_BF16(), DType.BF16.code());
        assertEquals(radixkv_h.RKV_DTYPE_FP8_E4M3(), DType.FP8_E4M3.code());
        assertEquals(radixkv_h.RKV_DTYPE_FP8_E5M2(), DType.FP8_E5M2.code());
        assertEquals(5, DType.values().length, "a new DType needs its RKV_DTYPE_* code checked here");
    }
}
