package io.radixkv.kvtier;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * The stored form of one page in the shared tier: a 104-byte header, then the page image
 * ({@link io.radixkv.paging.KvPool#readPage} layout: every layer's K then V bytes).
 *
 * <pre>
 *   magic "RKVP" | format version u16 | page size u16 | layers u16 | reserved u16
 *   KV dtype name, 8 ASCII bytes, zero-padded | K scale f32 | V scale f32 | payload bytes u64
 *   model fingerprint, 32 bytes | block hash, 32 bytes | CRC32C of the payload u32 | reserved u32
 * </pre>
 *
 * A reader accepts an entry only when every field matches its own pool (model, layout, dtype and
 * FP8 scales), the block hash is the one it asked for and the checksum holds: a foreign, stale,
 * truncated or corrupt entry is a miss.
 */
final class PageFormat {
    static final int MAGIC = 0x524B5650; // "RKVP"
    static final int VERSION = 1;
    static final int HEADER_BYTES = 104;
    private static final int LAYOUT = 68;

    private final byte[] layoutHeader; // the first LAYOUT bytes (everything up to the block hash)

    PageFormat(byte[] modelFingerprint, String kvDtype, int pageSize, int layers, float kScale, float vScale,
               long payloadBytes) {
        if (modelFingerprint.length != 32) {
            throw new IllegalArgumentException("model fingerprint must be 32 bytes, got " + modelFingerprint.length);
        }
        ByteBuffer b = ByteBuffer.allocate(LAYOUT).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC).putShort((short) VERSION).putShort((short) pageSize).putShort((short) layers).putShort((short) 0);
        b.put(Arrays.copyOf(kvDtype.getBytes(StandardCharsets.US_ASCII), 8));
        b.putFloat(kScale).putFloat(vScale).putLong(payloadBytes);
        b.put(modelFingerprint);
        this.layoutHeader = b.array();
    }

    long payloadBytes() {
        return ByteBuffer.wrap(layoutHeader, 28, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    /** Header + payload for a page whose chained hash is {@code hash}. */
    byte[] encode(byte[] hash, byte[] payload) {
        byte[] out = new byte[HEADER_BYTES + payload.length];
        System.arraycopy(layoutHeader, 0, out, 0, LAYOUT);
        System.arraycopy(hash, 0, out, LAYOUT, 32);
        ByteBuffer.wrap(out, LAYOUT + 32, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(crc(payload, 0, payload.length));
        System.arraycopy(payload, 0, out, HEADER_BYTES, payload.length);
        return out;
    }

    /** True when {@code entry} is a well-formed page of this layout for {@code hash}. */
    boolean accepts(byte[] entry, byte[] hash) {
        if (entry == null || entry.length != HEADER_BYTES + payloadBytes()) {
            return false;
        }
        if (!Arrays.equals(entry, 0, LAYOUT, layoutHeader, 0, LAYOUT)
                || !Arrays.equals(entry, LAYOUT, LAYOUT + 32, hash, 0, 32)) {
            return false;
        }
        int want = ByteBuffer.wrap(entry, LAYOUT + 32, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
        return want == crc(entry, HEADER_BYTES, entry.length - HEADER_BYTES);
    }

    private static int crc(byte[] b, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(b, off, len);
        return (int) c.getValue();
    }
}
