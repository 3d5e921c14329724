#!/usr/bin/python3
"""Independent KV-event subscriber for radixkv's tests (pyzmq + msgpack + cbor2 from Debian).

Subscribes to a vLLM-schema KV event stream, asks the replay socket for every batch it missed
(from sequence 0), decodes the msgpack batches [ts, [events], dp_rank] with their tagged array-like
events, recomputes every stored block's hash from its token ids, its parent and its LoRA name
(vLLM's extra keys: [lora_name] or None) with vLLM's sha256_cbor scheme, and prints one JSON summary
when the stream has been idle for --idle seconds. "by_lora" maps each stored event's lora_name ("" for
None) to the lora_ids and block hashes stored under it.
"""
import argparse
import hashlib
import json
import sys

import cbor2
import msgpack
import zmq

END_SEQ = -1


def sha256_cbor(obj):
    return hashlib.sha256(cbor2.dumps(obj, canonical=True)).digest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pub", required=True)
    ap.add_argument("--replay", required=True)
    ap.add_argument("--topic", default="kv-events")
    ap.add_argument("--seed", default="0")
    ap.add_argument("--idle", type=float, default=3.0)
    args = ap.parse_args()

    none_hash = sha256_cbor(args.seed)
    full = {}  # external (int) hash -> full 32-byte hash, from our own recomputation
    live = set()
    summary = {"batches": 0, "replayed": 0, "stored": 0, "removed": 0, "cleared": 0, "verified": 0,
               "mismatches": [], "unknown_parents": 0, "errors": [], "first_event": None, "seqs": [],
               "by_lora": {}}

    def handle(payload):
        batch = msgpack.unpackb(payload, raw=False)
        if not (isinstance(batch, list) and len(batch) in (2, 3) and isinstance(batch[0], float)
                and isinstance(batch[1], list)):
            summary["errors"].append("bad batch %r" % (batch,))
            return
        summary["batches"] += 1
        for ev in batch[1]:
            tag = ev[0]
            if summary["first_event"] is None:
                summary["first_event"] = tag
            if tag == "BlockStored":
                if len(ev) != 8:
                    summary["errors"].append("BlockStored of %d fields, not 8 (up to lora_name)" % len(ev))
                    continue
                _, hashes, parent, tokens, block_size, lora_id, medium, lora_name = ev
                mine_lora = summary["by_lora"].setdefault(lora_name or "", {"ids": [], "hashes": []})
                if lora_id not in mine_lora["ids"]:
                    mine_lora["ids"].append(lora_id)
                mine_lora["hashes"].extend(hashes)
                extra = None if lora_name is None else (lora_name,)
                parent_full = none_hash if parent is None else full.get(parent)
                if parent_full is None:
                    summary["unknown_parents"] += 1
                    continue
                if len(tokens) != block_size * len(hashes):
                    summary["errors"].append("token count %d != %d x %d" % (len(tokens), block_size, len(hashes)))
                    continue
                for i, h in enumerate(hashes):
                    mine = sha256_cbor((parent_full, tuple(tokens[i * block_size:(i + 1) * block_size]), extra))
                    ext = int.from_bytes(mine, "big") & ((1 << 64) - 1)
                    if ext != h:
                        summary["mismatches"].append([h, ext])
                    else:
                        summary["verified"] += 1
                    full[h] = mine
                    live.add(h)
                    parent_full = mine
                summary["stored"] += len(hashes)
            elif tag == "BlockRemoved":
                _, hashes, medium = ev
                for h in hashes:
                    if h not in live:
                        summary["errors"].append("removed unknown block %d" % h)
                    live.discard(h)
                summary["removed"] += len(hashes)
            elif tag == "AllBlocksCleared":
                live.clear()
                summary["cleared"] += 1
            else:
                summary["errors"].append("unknown tag %r" % (tag,))

    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.connect(args.pub)
    sub.setsockopt_string(zmq.SUBSCRIBE, args.topic)
    # DEALER, not REQ: the ROUTER streams many replies to one request, and REQ takes only one
    replay = ctx.socket(zmq.DEALER)
    replay.connect(args.replay)
    # let the subscription reach the publisher before the test starts its scripted requests
    sub.poll(500)
    print("ready", flush=True)

    state = {"last": -1}

    def replay_from(start, below):
        """Asks the replay socket for batches start.. and handles those below `below` in order."""
        replay.send_multipart([b"", start.to_bytes(8, "big")])
        while replay.poll(2000):
            _, rseq_bytes, rpayload = replay.recv_multipart()
            if not rpayload:
                return
            rseq = int.from_bytes(rseq_bytes, "big", signed=True)
            if rseq == state["last"] + 1 and rseq < below:
                handle(rpayload)
                summary["replayed"] += 1
                summary["seqs"].append(rseq)
                state["last"] = rseq
        summary["errors"].append("replay timed out")

    while sub.poll(int(args.idle * 1000)):
        topic, seq_bytes, payload = sub.recv_multipart()
        seq = int.from_bytes(seq_bytes, "big")
        if seq > state["last"] + 1:  # missed batches (all of them before we connected): replay
            replay_from(state["last"] + 1, seq)
        if seq == state["last"] + 1:
            handle(payload)
            summary["seqs"].append(seq)
            state["last"] = seq
    # a gap at the tail is invisible to a subscriber until a newer batch arrives: ask once more
    replay_from(state["last"] + 1, 1 << 62)
    summary["live"] = sorted(live)
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    sys.exit(main())
