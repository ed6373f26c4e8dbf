#!/usr/bin/env python3
"""Writes a tiny llama-architecture GGUF model from a fixed seed, with no download.

    python3 scripts/tiny-gguf.py OUT.gguf [--seed 7]

Needs the `gguf` and `numpy` packages (scripts/provision-llama-cpp-python installs both
into the cached venv). The same seed gives the same bytes on every machine.

The vocabulary is a sentencepiece ("llama") one of single characters, so that every token
decodes to its own text, valid UTF-8, distinct from every other token's, and every text
has exactly one tokenization: `<unk>`, `<s>` (BOS, id 1), `</s>` (EOS, id 2), the printable
ASCII characters and `▁` (ASCII text only: a character outside them has no token). So a
server that keys logprobs by token text (llama-cpp-python) still names each token
unambiguously, its tokenizer endpoint maps each text back to its id, and any generated
sequence detokenizes to a text that tokenizes back to it (no piece merges with another:
an earlier vocabulary with `▁<word>` prefixes let `▁i` `f` come back as `▁if`).
The weights are small normal draws (scaled so the logits are neither flat nor one-hot),
except that greedy decoding can never pick `<unk>` or `<s>` (see `main`): every generated
text then tokenizes back to its ids, which teacher forcing from text checks.
"""

import argparse
import sys

import numpy as np

try:
    import gguf
except ImportError:
    sys.exit("tiny-gguf.py: the `gguf` package is missing (run scripts/provision-llama-cpp-python)")

D_MODEL = 64
N_HEAD = 4
N_LAYER = 2
D_FF = 128
CONTEXT = 512
UNK_ID, BOS_ID = 0, 1
# The constant of hidden dimension 0, and how far it pushes `<unk>` and `<s>` down.
CONSTANT_DIM = 4.0
CONTROL_PENALTY = 100.0


def vocabulary():
    """Control tokens, then one piece per printable ASCII character and `▁`; no byte
    tokens, whose texts would collide with the characters', and no longer pieces, which
    would give some texts two tokenizations."""
    tokens, scores, types = [], [], []
    for text, kind in (("<unk>", gguf.TokenType.UNKNOWN), ("<s>", gguf.TokenType.CONTROL),
                       ("</s>", gguf.TokenType.CONTROL)):
        tokens.append(text)
        scores.append(0.0)
        types.append(kind)
    pieces = [chr(c) for c in range(0x21, 0x7F)] + ["\u2581"]
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
    # No space put in front of the text to tokenize: a logprob token's text (` for`) then
    # tokenizes back to that one token, as the tokenizer endpoint must map it.
    writer.add_add_space_prefix(False)

    def weight(*shape, scale=None):
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    # numpy shapes are ggml's reversed: (rows = outputs, columns = inputs).
    # Hidden dimension 0 is a constant CONSTANT_DIM in every embedding, and no attention
    # or feed-forward output writes it, so after the final norm it is positive at every
    # position; the output rows of `<unk>` and `<s>` read only it, negatively, so greedy
    # decoding never picks them (their text is empty or `▅`, which would not tokenize
    # back to the ids: teacher forcing from text needs every generated id to round-trip).
    # `</s>` stays a normal row, so EOS suppression is still exercised.
    embeddings = weight(vocab, D_MODEL, scale=1.0)
    embeddings[:, 0] = CONSTANT_DIM
    writer.add_tensor("token_embd.weight", embeddings)
    for layer in range(N_LAYER):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(D_MODEL, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w = weight(D_MODEL, D_MODEL)
            if name == "attn_output":
                w[0, :] = 0.0
            writer.add_tensor(f"{block}.{name}.weight", w)
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(D_MODEL, dtype=np.float32))
        writer.add_tensor(f"{block}.ffn_gate.weight", weight(D_FF, D_MODEL))
        writer.add_tensor(f"{block}.ffn_up.weight", weight(D_FF, D_MODEL))
        down = weight(D_MODEL, D_FF)
        down[0, :] = 0.0
        writer.add_tensor(f"{block}.ffn_down.weight", down)
    writer.add_tensor("output_norm.weight", np.ones(D_MODEL, dtype=np.float32))
    output = weight(vocab, D_MODEL, scale=3.0 / np.sqrt(D_MODEL))
    output[:, 0] = 0.0
    output[UNK_ID, :] = 0.0
    output[BOS_ID, :] = 0.0
    output[UNK_ID, 0] = output[BOS_ID, 0] = -CONTROL_PENALTY
    writer.add_tensor("output.weight", output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"wrote {args.out}: vocab {vocab}, {N_LAYER} layers, d_model {D_MODEL}, seed {args.seed}")


if __name__ == "__main__":
    main()
