package io.radixkv.kernels.cpu;

import io.radixkv.bindings.rkv_attention_args;
import io.radixkv.bindings.rkv_paged_kv;
import io.radixkv.kernels.AttentionChecks;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.MemorySegment;

/**
 * Fills the two halves of radixkv.h's attention params structs ({@code rkv_decode_params},
 * {@code rkv_prefill_params}) for one native call, for libradixkv and libradixkv_cuda alike
 * (host or device addresses: the struct itself is host memory the caller allocates and keeps
 * alive for the call). Arguments are validated by the caller ({@link AttentionChecks}).
 */
public final class NativeAttentionArgs {
    private NativeAttentionArgs() {}

    /** The query side ({@code rkv_attention_args}); a null or NULL {@code lse} is written as NULL. */
    public static void query(MemorySegment args, MemorySegment q, DType qDtype, MemorySegment out, DType outDtype,
                      MemorySegment lse, AttentionParams params) {
        rkv_attention_args.q(args, q);
        rkv_attention_args.out(args, out);
        rkv_attention_args.lse(args, orNull(lse));
        rkv_attention_args.q_dtype(args, qDtype.code());
        rkv_attention_args.out_dtype(args, outDtype.code());
        rkv_attention_args.num_qo_heads(args, params.numQoHeads());
        rkv_attention_args.sm_scale(args, params.smScale());
        rkv_attention_args.logits_soft_cap(args, params.logitsSoftCap());
        rkv_attention_args.window_left(args, params.windowLeft());
    }

    /** One layer's pools and the batch's page table ({@code rkv_paged_kv}). */
    public static void pagedKv(MemorySegment kv, KvCacheView cache, MemorySegment kvIndptr, MemorySegment kvIndices,
                        MemorySegment kvLastPageLen, int batchSize) {
        PagedKvLayout l = cache.layout();
        rkv_paged_kv.k_cache(kv, cache.kCache());
        rkv_paged_kv.v_cache(kv, cache.vCache());
        rkv_paged_kv.cache_dtype(kv, l.cacheDtype().code());
        rkv_paged_kv.page_size(kv, l.pageSize());
        rkv_paged_kv.num_pages(kv, l.numPages());
        rkv_paged_kv.num_kv_heads(kv, l.numKvHeads());
        rkv_paged_kv.head_dim(kv, l.headDim());
        rkv_paged_kv.kv_indptr(kv, kvIndptr);
        rkv_paged_kv.kv_indices(kv, kvIndices);
        rkv_paged_kv.kv_last_page_len(kv, kvLastPageLen);
        rkv_paged_kv.batch_size(kv, batchSize);
        rkv_paged_kv.k_scale(kv, cache.kScale());
        rkv_paged_kv.v_scale(kv, cache.vScale());
    }

    static MemorySegment orNull(MemorySegment s) {
        return AttentionChecks.isNull(s) ? MemorySegment.NULL : s;
    }
}
