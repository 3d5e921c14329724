package io.radixkv.checkpoint;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The files of a checkpoint and the tensors they declare, under the names the model's
 * {@link TensorSpec}s use (headers only; no data is read). {@link #open} reads the safetensors
 * files of a Hugging Face checkpoint directory; another container (a GGUF file) builds one with
 * its tensors renamed to Hugging Face names. With {@code model.safetensors.index.json} the files are the
 * shards its {@code weight_map} names, and each listed tensor must be in its shard; without it,
 * every {@code *.safetensors} file of the directory. A tensor may appear in only one file.
 *
 * @param dir the directory (or the single file)
 * @param files the files, in name order
 * @param tensors every tensor by name
 */
public record Checkpoint(Path dir, List<CheckpointFile> files, Map<String, TensorEntry> tensors) {
    /** The index file transformers writes beside sharded checkpoints. */
    public static final String INDEX = "model.safetensors.index.json";

    private static final ObjectMapper JSON = new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    public Checkpoint {
        files = List.copyOf(files);
        tensors = Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
    }

    /** Reads the headers of the checkpoint in {@code dir}. */
    public static Checkpoint open(Path dir) throws IOException {
        Path index = dir.resolve(INDEX);
        Map<String, String> weightMap = Files.isRegularFile(index) ? weightMap(index) : null;
        List<Path> paths = weightMap != null ? shards(dir, index, weightMap) : listed(dir);
        List<CheckpointFile> files = new ArrayList<>();
        Map<String, TensorEntry> tensors = new LinkedHashMap<>();
        for (Path p : paths) {
            SafetensorsFile f = SafetensorsFile.read(p);
            files.add(f);
            for (TensorEntry t : f.tensors().values()) {
                TensorEntry prev = tensors.putIfAbsent(t.name(), t);
                if (prev != null) {
                    throw new CheckpointException(t.file() + ": tensor " + t.name() + " appears in both " + prev.file()
                            + " and " + t.file());
                }
            }
        }
        if (weightMap != null) {
            for (Map.Entry<String, String> e : weightMap.entrySet()) {
                TensorEntry t = tensors.get(e.getKey());
                Path shard = dir.resolve(e.getValue());
                if (t == null || !t.file().equals(shard)) {
                    throw new CheckpointException(shard + ": tensor " + e.getKey() + " is listed there by " + index
                            + " but the shard does not hold it");
                }
            }
        }
        return new Checkpoint(dir, files, tensors);
    }

    private static Map<String, String> weightMap(Path index) throws IOException {
        JsonNode root;
        try {
            root = JSON.readTree(index.toFile());
        } catch (IOException e) {
            throw new CheckpointException(index + ": cannot parse: " + e.getMessage().lines().findFirst().orElse(""), e);
        }
        JsonNode map = root == null ? null : root.get("weight_map");
        if (map == null || !map.isObject()) {
            throw new CheckpointException(index + ": no \"weight_map\" object");
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : map.properties()) {
            if (!e.getValue().isTextual()) {
                throw new CheckpointException(index + ": tensor " + e.getKey() + " maps to " + e.getValue()
                        + ", not a file name");
            }
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }

    /** The distinct shards the index names, each a plain file in {@code dir} that must exist. */
    private static List<Path> shards(Path dir, Path index, Map<String, String> weightMap) throws CheckpointException {
        Map<String, String> firstTensor = new LinkedHashMap<>();
        weightMap.forEach((tensor, shard) -> firstTensor.putIfAbsent(shard, tensor));
        List<Path> out = new ArrayList<>();
        for (String shard : new TreeSet<>(firstTensor.keySet())) {
            Path p = dir.resolve(shard);
            if (shard.isEmpty() || !dir.equals(p.getParent()) || !shard.equals(p.getFileName().toString())) {
                throw new CheckpointException(index + ": tensor " + firstTensor.get(shard) + " maps to '" + shard
                        + "', not a file name in " + dir);
            }
            if (!Files.isRegularFile(p)) {
                throw new CheckpointException(p + ": shard listed by " + index + " (for tensor "
                        + firstTensor.get(shard) + " and others) is missing");
            }
            out.add(p);
        }
        return out;
    }

    private static List<Path> listed(Path dir) throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().toList();
        }
        if (files.isEmpty()) {
            throw new CheckpointException("no *.safetensors files in " + dir);
        }
        return files;
    }

    /** Total bytes of the files. */
    public long fileBytes() {
        return files.stream().mapToLong(CheckpointFile::size).sum();
    }
}
