#!/usr/bin/env python3
"""Writes a tiny llama-architecture GGUF model from a fixed seed, with no download.

    python3 scripts/tiny-gguf.py OUT.gguf [--seed 7]

Needs the `gguf` and `numpy` packages (scripts/provision-llama-cpp-python installs both
into the cached venv). The same seed gives the same bytes on every machine.

The vocabulary is a sentencepiece ("llama") one built so that every token decodes to its
own text, valid UTF-8, distinct from every other token's: `<unk>`, `<s>` (BOS, id 1),
`</s>` (EOS, id 2), the printable ASCII characters, `▁`, and the prefixes of
`▁<word>` pieces (ASCII text only: a character outside them has no token). So a server that keys logprobs by token text (llama-cpp-python) still
names each token unambiguously, and its tokenizer endpoint maps each text back to its id.
The weights are small normal draws (scaled so the logits are neither flat nor one-hot).
"""

import argparse
import sys

import numpy as np

try:
    import gguf
except ImportError:
    sys.exit("tiny-gguf.py: the `gguf` package is missing (run scripts/provision-llama-cpp-python)")

WORDS = (
    "the of and to in is that for it as with was on be by at this are from or an have not "
    "but they which one you all were her she there would their we him been has when who will "
    "more no if out so said what up its about into than them can only other new some could "
    "time these two may then do first any my now such like our over man me even most made"
).split()

D_MODEL = 64
N_HEAD = 4
N_LAYER = 2
D_FF = 128
CONTEXT = 512


def vocabulary():
    """Control tokens, then one piece per printable ASCII character and `▁`, then every
    prefix of every `▁<word>`: sentencepiece merges a word piece by piece, so each
    intermediate piece must exist; no byte tokens, whose texts would collide with the
    characters'. Longer pieces score higher, so the merge prefers them."""
    tokens, scores, types = [], [], []
    for text, kind in (("<unk>", gguf.TokenType.UNKNOWN), ("<s>", gguf.TokenType.CONTROL),
                       ("</s>", gguf.TokenType.CONTROL)):
        tokens.append(text)
        scores.append(0.0)
        types.append(kind)
    pieces = [chr(c) for c in range(0x21, 0x7F)] + ["\u2581"]
    for word in WORDS:
        for end in range(2, len(word) + 2):
            piece = "\u2581" + word[: end - 1]
            if piece not in pieces:
                pieces.append(piece)
    for piece in pieces:
        tokens.append(piece)
        scores.append(float(len(piece)))
        types.append(gguf.TokenType.NORMAL)
    return [t.encode() for t in tokens], scores, types


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    tokens, scores, types = vocabulary()
    vocab = len(tokens)

    writer = gguf.GGUFWriter(args.out, "llama")
    writer.add_name(f"referee-tiny-{args.seed}")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(D_MODEL)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(D_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(D_MODEL // N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)

    def weight(*shape, scale=None):
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    # numpy shapes are ggml's reversed: (rows = outputs, columns = inputs).
    writer.add_tensor("token_embd.weight", weight(vocab, D_MODEL, scale=1.0))
    for layer in range(N_LAYER):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(D_MODEL, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{block}.{name}.weight", weight(D_MODEL, D_MODEL))
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(D_MODEL, dtype=np.float32))
        writer.add_tensor(f"{block}.ffn_gate.weight", weight(D_FF, D_MODEL))
        writer.add_tensor(f"{block}.ffn_up.weight", weight(D_FF, D_MODEL))
        writer.add_tensor(f"{block}.ffn_down.weight", weight(D_MODEL, D_FF))
    writer.add_tensor("output_norm.weight", np.ones(D_MODEL, dtype=np.float32))
    writer.add_tensor("output.weight", weight(vocab, D_MODEL, scale=3.0 / np.sqrt(D_MODEL)))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"wrote {args.out}: vocab {vocab}, {N_LAYER} layers, d_model {D_MODEL}, seed {args.seed}")


if __name__ == "__main__":
    main()
