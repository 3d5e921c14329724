package io.radixkv.text;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.objects.date.StrftimeFormatter;
import java.time.ZonedDateTime;
import java.util.Locale;
import java.util.Map;
import jinjava.javax.el.CompositeELResolver;

/**
 * One Jinjava engine set up as transformers sets up Jinja2 for chat templates
 * ({@code utils/chat_template_utils.py}, {@code _compile_jinja_template}):
 * {@code trim_blocks} and {@code lstrip_blocks} (the latter applied by {@link JinjaCompat}), loop controls, its {@code tojson} filter
 * (Python's json.dumps with ensure_ascii=False, indent, separators, sort_keys), the globals
 * {@code raise_exception} and {@code strftime_now}; plus what Python's Jinja2 gives for
 * free: str methods on strings, {@code trim} as Python's {@code str.strip()}, and
 * {@code is iterable} as Python's {@code iter()} sees it. Templates
 * read the context but never write into it (transformers' environment is immutable).
 */
final class TransformersJinja {

    static final Jinjava ENGINE = create();
    /** What the names of the template functions hold as variables, so {@code is defined} sees them. */
    static final String GLOBAL = "<built-in function>";

    private TransformersJinja() {}

    private static Jinjava create() {
        CompositeELResolver resolver = new CompositeELResolver();
        resolver.add(new PyMethodResolver());
        resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
        JinjavaConfig config = JinjavaConfig.newBuilder()
                .withTrimBlocks(true)
                .withLstripBlocks(false) // done by JinjaCompat, as Jinja2 does it
                .withElResolver(resolver)
                .withLocale(Locale.ROOT)
                // Never render template syntax that arrives in values: message content is data.
                .withNestedInterpretationEnabled(false)
                // Jinja2's behaviour where Jinjava keeps its legacy one: {{- -}} trimming,
                // operator precedence (x|length - 1), Python-style printing of lists and dicts,
                // iterating a dict gives its keys.
                .withLegacyOverrides(LegacyOverrides.newBuilder()
                        .withUseTrimmingForNotesAndExpressions(true)
                        .withUseNaturalOperatorPrecedence(true)
                        .withParseWhitespaceControlStrictly(true)
                        .withEvaluateMapKeys(true)
                        .withIterateOverMapKeys(true)
                        .withUsePyishObjectMapper(true)
                        .withKeepNullableLoopValues(true)
                        .build())
                .build();
        Jinjava jinjava = new Jinjava(config);
        jinjava.registerFunction(new ELFunctionDefinition("", "raise_exception", TransformersJinja.class,
                "raiseException", String.class));
        jinjava.registerFunction(new ELFunctionDefinition("", "strftime_now", TransformersJinja.class,
                "strftimeNow", String.class));
        jinjava.registerFilter(new ToJson());
        jinjava.registerFilter(new Trim());
        jinjava.getGlobalContext().registerExpTest(new Iterable());
        return jinjava;
    }

    /** The template's own error, as transformers raises jinja2.TemplateError(message). */
    public static String raiseException(String message) {
        throw new TemplateRaised(message);
    }

    /** datetime.now().strftime(format). */
    public static String strftimeNow(String format) {
        return StrftimeFormatter.format(ZonedDateTime.now(), format, Locale.US);
    }

    /** Thrown by raise_exception; carries the template's message unchanged. */
    static final class TemplateRaised extends RuntimeException {
        TemplateRaised(String message) {
            super(message);
        }
    }

    private static final class ToJson implements Filter {
        @Override
        public String getName() {
            return "tojson";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            return filter(var, interpreter, args, Map.of());
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            Object ensureAscii = kwargs.getOrDefault("ensure_ascii", args.length > 0 ? args[0] : false);
            if (Boolean.TRUE.equals(ensureAscii)) {
                throw new IllegalArgumentException("tojson(ensure_ascii=True) is not supported");
            }
            Object indent = kwargs.getOrDefault("indent", args.length > 1 ? args[1] : null);
            Object separators = kwargs.getOrDefault("separators", args.length > 2 ? args[2] : null);
            Object sortKeys = kwargs.getOrDefault("sort_keys", args.length > 3 ? args[3] : false);
            String itemSep = null;
            String keySep = null;
            if (separators instanceof java.util.List<?> l && l.size() == 2) {
                itemSep = String.valueOf(l.get(0));
                keySep = String.valueOf(l.get(1));
            }
            return PyJson.dumps(var, indent instanceof Number n ? n.intValue() : null, itemSep, keySep,
                    Boolean.TRUE.equals(sortKeys));
        }
    }

    /**
     * Jinja2's {@code is iterable}: whatever {@code iter()} accepts, dicts and strings included
     * (Jinjava's own test says no to both; tool templates ask it of tool-call arguments).
     */
    private static final class Iterable implements com.hubspot.jinjava.lib.exptest.ExpTest {
        @Override
        public String getName() {
            return "iterable";
        }

        @Override
        public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
            return var instanceof java.lang.Iterable<?> || var instanceof Map<?, ?> || var instanceof CharSequence
                    || var != null && var.getClass().isArray();
        }
    }

    private static final class Trim implements Filter {
        @Override
        public String getName() {
            return "trim";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            String chars = args.length > 0 ? args[0] : null;
            return var == null ? "" : PyStr.strip(String.valueOf(var), chars, true, true);
        }
    }
}
