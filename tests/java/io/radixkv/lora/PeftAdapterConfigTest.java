package io.radixkv.lora;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/** PEFT's rules for target modules, layers, rank and alpha patterns, rsLoRA, and the refused fields. */
class PeftAdapterConfigTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static PeftAdapterConfig parse(String targets, String extra) throws IOException {
        return PeftAdapterConfig.parse(JSON.readTree(PeftAdapterWriter.config(8, 16, targets, extra)), "cfg");
    }

    private static final String Q = "model.layers.0.self_attn.q_proj";
    private static final String Q3 = "model.layers.3.self_attn.q_proj";
    private static final String DOWN = "model.layers.0.mlp.down_proj";

    @Test
    void aListMatchesWholeNamesOrDottedSuffixes() throws IOException {
        PeftAdapterConfig c = parse("[\"q_proj\", \"mlp.down_proj\"]", "");
        assertTrue(c.targets(Q, 0));
        assertTrue(c.targets(DOWN, 0));
        assertFalse(c.targets("model.layers.0.self_attn.k_proj", 0));
        assertFalse(parse("[\"proj\"]", "").targets(Q, 0), "a suffix must start at a dot");
        assertTrue(parse("[\"" + Q + "\"]", "").targets(Q, 0));
    }

    @Test
    void aStringIsARegexOverTheWholeName() throws IOException {
        PeftAdapterConfig c = parse("\".*\\\\.(q|v)_proj\"", "");
        assertTrue(c.targets(Q, 0));
        assertTrue(c.targets("model.layers.1.self_attn.v_proj", 1));
        assertFalse(c.targets(DOWN, 0));
        assertFalse(parse("\"q_proj\"", "").targets(Q, 0), "re.fullmatch, not a search");
        assertTrue(parse("\"all-linear\"", "").targets(DOWN, 0));
    }

    @Test
    void layersToTransformAndExcludeModulesNarrowTheTargets() throws IOException {
        PeftAdapterConfig c = parse("[\"q_proj\"]", "\"layers_to_transform\": [0, 2]");
        assertTrue(c.targets(Q, 0));
        assertFalse(c.targets(Q3, 3));
        assertFalse(parse("[\"q_proj\"]", "\"layers_to_transform\": 1").targets(Q, 0));
        assertFalse(parse("[\"q_proj\"]", "\"exclude_modules\": [\"" + Q + "\"]").targets(Q, 0));
        assertTrue(parse("[\"q_proj\"]", "\"exclude_modules\": [\"" + Q + "\"]").targets(Q3, 3));
    }

    @Test
    void rankAndAlphaPatternsAndRsLoraSetEachModulesScale() throws IOException {
        PeftAdapterConfig c = parse("[\"q_proj\", \"down_proj\"]",
                "\"rank_pattern\": {\"model.layers.3.self_attn.q_proj\": 4}, \"alpha_pattern\": {\"down_proj\": 32}");
        assertEquals(8, c.rankOf(Q));
        assertEquals(4, c.rankOf(Q3));
        assertEquals(16.0 / 8, c.scaleOf(Q), 0);
        assertEquals(16.0 / 4, c.scaleOf(Q3), 0);
        assertEquals(32.0 / 8, c.scaleOf(DOWN), 0);
        PeftAdapterConfig rs = parse("[\"q_proj\"]", "\"use_rslora\": true");
        assertEquals(16 / Math.sqrt(8), rs.scaleOf(Q), 1e-15);
    }

    @Test
    void whatCannotBeServedIsRefusedNamingTheField() {
        String[][] cases = {
                {"[\"q_proj\"]", "\"use_dora\": true", "use_dora"},
                {"[\"q_proj\"]", "\"modules_to_save\": [\"lm_head\"]", "modules_to_save"},
                {"[\"q_proj\", \"embed_tokens\"]", "", "target_modules targets embed_tokens"},
                {"[\"lm_head\"]", "", "target_modules targets lm_head"},
                {"\".*\"", "", "target_modules targets"},
                {"[\"q_proj\"]", "\"peft_type\": \"IA3\"", "peft_type"},
                {"\"(q_proj\"", "", "target_modules \"(q_proj\" is not a valid regex"},
                {"\".*q_proj\"", "\"layers_to_transform\": [1]", "layers_to_transform"},
                {"[\"q_proj\"]", "\"rank_pattern\": {\"q_proj\": 0}", "rank_pattern"},
        };
        for (String[] c : cases) {
            String json = PeftAdapterWriter.config(8, 16, c[0], c[1]);
            if (c[1].startsWith("\"use_dora\"") || c[1].startsWith("\"modules_to_save\"")
                    || c[1].startsWith("\"peft_type\"")) {
                // replace the writer's own value of the field
                String field = c[1].substring(0, c[1].indexOf(':'));
                json = json.replaceFirst(java.util.regex.Pattern.quote(field) + ": [^,]+,", "");
            }
            String j = json;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> PeftAdapterConfig.parse(JSON.readTree(j), "cfg"), c[2]);
            assertTrue(e.getMessage().contains(c[2]), c[2] + ": " + e.getMessage());
        }
        IllegalArgumentException bias = assertThrows(IllegalArgumentException.class, () -> PeftAdapterConfig.parse(
                JSON.readTree(PeftAdapterWriter.config(8, 16, "[\"q_proj\"]", "").replace("\"bias\": \"none\"",
                        "\"bias\": \"all\"")), "cfg"));
        assertTrue(bias.getMessage().contains("bias \"all\""), bias.getMessage());
    }
}
