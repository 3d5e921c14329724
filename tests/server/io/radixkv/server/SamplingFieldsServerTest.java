package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.engine.EngineConfig;
import io.radixkv.text.HfTokenizer;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * vLLM's sampling fields on both endpoints of a text model (a random-weight Llama checkpoint
 * with the Llama 3.1 tokenizer): values outside vLLM's ranges are a 400 naming the field, and
 * each field reaches the sampler (logit_bias forces a token, min_tokens holds back EOS, top_k 1
 * and min_p 1 are the argmax, a large repetition_penalty repeats no token, bad_words are tokenized
 * as vLLM does and never generated, stop strings are matched only past min_tokens).
 */
class SamplingFieldsServerTest {
    @TempDir
    static Path tmp;

    private static HfTokenizer tokenizer;
    private static ServerTestSupport t;

    @BeforeAll
    static void start() throws IOException {
        Path model = TinyLlamaCheckpoint.withTokenizer(tmp.resolve("tiny-llama"), "llama3_1", 11);
        tokenizer = HfTokenizer.load(model);
        EngineConfig ec = EngineConfig.builder().model(model.toString()).backend("cpu").numPages(64)
                .maxRunning(4).maxBatchTokens(256).maxSeqLen(256).build();
        t = new ServerTestSupport(ec, tokenizer, ServerConfig.local("tiny-llama"));
    }

    @AfterAll
    static void stop() {
        ServerTestSupport.close(t, tokenizer);
    }

    private static ObjectNode completion(int maxTokens) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("prompt", "Once upon a time").put("max_tokens", maxTokens)
                .put("temperature", 0).put("ignore_eos", true);
        return b;
    }

    private static ObjectNode chat(int maxTokens) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("max_tokens", maxTokens).put("temperature", 0);
        b.putArray("messages").addObject().put("role", "user").put("content", "Count to ten.");
        return b;
    }

    private static int[] tokenIds(JsonNode completion) {
        JsonNode ids = completion.get("choices").get(0).get("token_ids");
        int[] out = new int[ids.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ids.get(i).asInt();
        }
        return out;
    }

    @Test
    void valuesOutsideVllmsRangesAre400NamingTheField() throws Exception {
        String[][] bad = {{"top_k", "-2"}, {"top_k", "1.5"}, {"min_p", "1.5"}, {"min_p", "-0.1"},
            {"repetition_penalty", "0"}, {"repetition_penalty", "-1"}, {"presence_penalty", "2.5"},
            {"frequency_penalty", "-3"}, {"frequency_penalty", "\"x\""}, {"logit_bias", "[1]"},
            {"logit_bias", "{\"x\":1}"}, {"logit_bias", "{\"" + tokenizer.vocabSize() + "\":1}"},
            {"logit_bias", "{\"-1\":1}"}, {"logit_bias", "{\"1\":\"a\"}"}, {"min_tokens", "-1"},
            {"min_tokens", "9"}, {"bad_words", "\"x\""}, {"bad_words", "[\" \"]"}, {"bad_words", "[1]"}};
        for (String path : new String[] {"/v1/completions", "/v1/chat/completions"}) {
            for (String[] f : bad) {
                ObjectNode b = path.contains("chat") ? chat(8) : completion(8);
                b.set(f[0], ServerTestSupport.JSON.readTree(f[1]));
                HttpResponse<String> r = t.post(path, b.toString());
                assertEquals(400, r.statusCode(), path + " " + f[0] + "=" + f[1] + ": " + r.body());
                assertEquals(f[0], ServerTestSupport.json(r).get("error").get("param").asText(), r.body());
            }
        }
        // vLLM's neutral values pass
        ObjectNode neutral = completion(2).put("top_k", -1).put("min_p", 0).put("repetition_penalty", 1)
                .put("presence_penalty", 0).put("frequency_penalty", 0).put("min_tokens", 0);
        neutral.putObject("logit_bias");
        t.postOk("/v1/completions", neutral);
    }

    @Test
    void logitBiasForcesOrBansATokenAndClampsTo100() throws Exception {
        int forced = 1234;
        for (String bias : new String[] {"100", "500"}) {
            ObjectNode b = completion(5).put("temperature", 1).put("seed", 3);
            b.putObject("logit_bias").set(Integer.toString(forced), ServerTestSupport.JSON.readTree(bias));
            for (int id : tokenIds(t.postOk("/v1/completions", b))) {
                assertEquals(forced, id, "bias " + bias);
            }
        }
        int first = tokenIds(t.postOk("/v1/completions", completion(1)))[0];
        ObjectNode ban = completion(1);
        ban.putObject("logit_bias").put(Integer.toString(first), -100);
        assertNotEquals(first, tokenIds(t.postOk("/v1/completions", ban))[0]);
    }

    @Test
    void minTokensHoldsBackEosThatLogitBiasForces() throws Exception {
        int eos = tokenizer.stopTokenIds().iterator().next();
        for (String path : new String[] {"/v1/completions", "/v1/chat/completions"}) {
            ObjectNode b = path.contains("chat") ? chat(10) : completion(10).put("ignore_eos", false);
            b.putObject("logit_bias").put(Integer.toString(eos), 100);
            JsonNode now = t.postOk(path, b);
            assertEquals(1, now.get("usage").get("completion_tokens").asInt(), now.toString());
            JsonNode held = t.postOk(path, b.put("min_tokens", 3));
            assertEquals(4, held.get("usage").get("completion_tokens").asInt(), held.toString());
            assertEquals("stop", held.get("choices").get(0).get("finish_reason").asText());
        }
        // with ignore_eos the forced EOS neither ends generation nor is masked
        ObjectNode ignored = completion(6);
        ignored.putObject("logit_bias").put(Integer.toString(eos), 100);
        JsonNode j = t.postOk("/v1/completions", ignored);
        assertEquals(6, j.get("usage").get("completion_tokens").asInt(), j.toString());
        t.assertPagesConserved();
    }

    @Test
    void stopStringsAreMatchedOnlyPastMinTokens() throws Exception {
        String first = t.postOk("/v1/completions", completion(1)).get("choices").get(0).get("text").asText();
        assertTrue(!first.isEmpty(), "the first token has text");
        ObjectNode b = completion(8);
        b.putArray("stop").add(first);
        assertEquals(1, t.postOk("/v1/completions", b).get("usage").get("completion_tokens").asInt());
        JsonNode held = t.postOk("/v1/completions", b.put("min_tokens", 3));
        assertTrue(held.get("usage").get("completion_tokens").asInt() >= 4, held.toString());
        assertTrue(held.get("choices").get(0).get("text").asText().startsWith(first), held.toString());
    }

    @Test
    void badWordsAreTokenizedAsVllmDoesAndNeverGenerated() throws Exception {
        RequestParser parser = new RequestParser(TextModel.of(tokenizer, "tiny-llama", true), "tiny-llama",
                tokenizer.vocabSize(), new Admission(1, 1));
        ObjectNode b = completion(4);
        b.putArray("bad_words").add("  hello world");
        List<List<Integer>> words = parser.completion(b).sampling().badWords();
        List<Integer> plain = Arrays.stream(tokenizer.encode("hello world", false)).boxed().toList();
        List<Integer> spaced = Arrays.stream(tokenizer.encode(" hello world", false)).boxed().toList();
        assertEquals(List.of(plain, spaced), words);
        // a word forced by logit_bias, banned as a bad word: -inf wins over +100
        int[] hello = tokenizer.encode("hello", false);
        assertEquals(1, hello.length);
        ObjectNode forced = completion(1);
        forced.putObject("logit_bias").put(Integer.toString(hello[0]), 100);
        assertEquals(hello[0], tokenIds(t.postOk("/v1/completions", forced))[0]);
        forced.putArray("bad_words").add("hello");
        assertNotEquals(hello[0], tokenIds(t.postOk("/v1/completions", forced))[0]);
    }

    @Test
    void topKOneAndMinPOneAreTheArgmaxAndRepetitionPenaltyRepeatsNothing() throws Exception {
        int[] greedy = tokenIds(t.postOk("/v1/completions", completion(12)));
        for (ObjectNode b : new ObjectNode[] {completion(12).put("temperature", 1.5).put("seed", 5).put("top_k", 1),
            completion(12).put("temperature", 1.5).put("seed", 5).put("min_p", 1.0)}) {
            assertEquals(java.util.Arrays.toString(greedy), java.util.Arrays.toString(tokenIds(
                    t.postOk("/v1/completions", b))), b.toString());
        }
        int[] prompt = tokenizer.encode("Once upon a time", true);
        int[] penalized = tokenIds(t.postOk("/v1/completions", completion(12).put("repetition_penalty", 1e6)));
        Set<Integer> seen = new HashSet<>();
        for (int p : prompt) {
            seen.add(p);
        }
        for (int id : penalized) {
            assertTrue(seen.add(id), "token " + id + " repeated under repetition_penalty 1e6");
        }
        // presence and frequency penalties with a seed repeat
        ObjectNode pf = completion(8).put("temperature", 1).put("seed", 9).put("presence_penalty", 1.5)
                .put("frequency_penalty", -1.0).put("top_k", 40).put("min_p", 0.01);
        assertEquals(t.postOk("/v1/completions", pf).get("choices").get(0).get("token_ids"),
                t.postOk("/v1/completions", pf).get("choices").get(0).get("token_ids"));
    }
}
