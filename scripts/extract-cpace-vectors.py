#!/usr/bin/env python3
"""Writes Tests/AutoFillTests/Fixtures/cpace-x25519-sha512.json: the official CPace test vectors for
CPACE-X25519-SHA512 (string utilities, generator, one exchange, low-order points), taken from the
draft's own text so that nothing here is recomputed by Keyhaven.

Source: draft-irtf-cfrg-cpace-21 (https://datatracker.ietf.org/doc/draft-irtf-cfrg-cpace/21/),
repository https://github.com/cfrg/draft-irtf-cfrg-cpace, tag draft-irtf-cfrg-cpace-21
(commit 8fb4056e1b9201927d9f651b9970d9d5660c7892), file draft-irtf-cfrg-cpace.md: its appendix's
base64 JSON blocks ("Testvectors as JSON file encoded as BASE64") and the low-order table of
"Test vectors for G_X25519.scalar_mult_vfy: low order points".

    scripts/extract-cpace-vectors.py PATH/TO/draft-irtf-cfrg-cpace.md
"""
import base64
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "Tests/AutoFillTests/Fixtures/cpace-x25519-sha512.json"

draft = pathlib.Path(sys.argv[1]).read_text(encoding="utf-8")
blocks = []
for block in re.findall(r"~~~ test-vectors\n(.*?)~~~", draft, re.S):
    text = "".join(line.strip().lstrip("#") for line in block.strip().splitlines())
    blocks.append({key: value.lower() if isinstance(value, str) else value
                   for key, value in json.loads(base64.b64decode(text)).items()})


def block_with(key):
    return next(block for block in blocks if key in block)


prepend = block_with("prepend_len(b'1234')")
lv = block_with("lv_cat(b'1234',b'5',b'',b'678')")
ir = block_with("transcript_ir(b'123',b'PartyA',b'234',b'PartyB')")
generator = next(block for block in blocks if "decoded field element of 255 bits" in block)
exchange = next(block for block in blocks if "ISK_IR" in block and len(block["g"]) == 64)

# The low-order table is plain text: "uN: HEX" and "qN: HEX" lines, the scalar "s = HEX", and which
# points MUST abort.
section = draft.split("### Test vectors for G\\_X25519.scalar\\_mult\\_vfy: low order points", 1)[1]
section = section.split("####", 1)[0]
points = dict(re.findall(r"^u([0-9a-b]): ([0-9a-f]{64})$", section, re.M))
results = dict(re.findall(r"^q([0-9a-b]): ([0-9a-f]{64})$", section, re.M))
scalar = re.search(r"^s = ([0-9a-f]{64})$", section, re.M).group(1)
aborting = re.search(r"Additionally, (.*?) MUST trigger", section, re.S).group(1)
aborting = set(re.findall(r"u([0-9a-b])", aborting))
assert len(points) == 12 and points.keys() == results.keys() and len(aborting) == 7

vectors = {
    "source": "draft-irtf-cfrg-cpace-21, appendix 'Test vectors' (CPace using group X25519 and hash SHA-512) and "
    "'CPace function definitions', from https://github.com/cfrg/draft-irtf-cfrg-cpace tag draft-irtf-cfrg-cpace-21 "
    "(commit 8fb4056e1b9201927d9f651b9970d9d5660c7892), draft-irtf-cfrg-cpace.md; extracted by "
    "scripts/extract-cpace-vectors.py. All values lowercase hex.",
    "prependLen": [
        {"input": "", "output": prepend["prepend_len(b'')"]},
        {"input": "31323334", "output": prepend["prepend_len(b'1234')"]},
        {"input": bytes(range(127)).hex(), "output": prepend["prepend_len(bytes(range(127)))"]},
        {"input": bytes(range(128)).hex(), "output": prepend["prepend_len(bytes(range(128)))"]},
    ],
    "lvCat": {"inputs": ["31323334", "35", "", "363738"], "output": lv["lv_cat(b'1234',b'5',b'',b'678')"]},
    "transcriptIR": [
        {"Ya": "313233", "ADa": ir["b'PartyA'"], "Yb": "323334", "ADb": ir["b'PartyB'"],
         "output": ir["transcript_ir(b'123',b'PartyA',b'234',b'PartyB')"]},
        {"Ya": "33343536", "ADa": ir["b'PartyA'"], "Yb": "32333435", "ADb": ir["b'PartyB'"],
         "output": ir["transcript_ir(b'3456',b'PartyA',b'2345',b'PartyB')"]},
    ],
    "generator": {
        "PRS": generator["PRS"], "CI": generator["CI"], "sid": generator["sid"],
        "generatorString": generator["generator_string(G.DSI,PRS,CI,sid,H.s_in_bytes)"],
        "hash": generator["hash generator string"],
        "u": generator["decoded field element of 255 bits"],
        "g": generator["generator g"],
    },
    "exchange": {key: exchange[key] for key in
                 ["PRS", "CI", "sid", "g", "ya", "ADa", "Ya", "yb", "ADb", "Yb", "K", "ISK_IR", "sid_output_ir"]},
    "lowOrder": {
        "s": scalar,
        "points": [{"u": points[n], "q": results[n], "abort": n in aborting} for n in "0123456789ab"],
    },
}
OUT.write_text(json.dumps(vectors, indent=2) + "\n", encoding="utf-8")
print(f"wrote {OUT.relative_to(ROOT)}")
