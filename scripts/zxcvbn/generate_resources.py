#!/usr/bin/env python3
"""Generate the PasswordStrength data resources from the python `zxcvbn` 4.5.0 package.

Usage (from the repository root):

    pip install zxcvbn==4.5.0
    python3 scripts/zxcvbn/generate_resources.py            # writes into ./Sources/PasswordStrength/Resources
    python3 scripts/zxcvbn/generate_resources.py --check    # exit 1 if the files on disk differ

Outputs (all UTF-8, LF line endings, byte-for-byte deterministic):

  Sources/PasswordStrength/Resources/frequency_lists/<name>.txt
      one word per line, in the package's list order; line N has rank N
      (python zxcvbn: matching.build_ranked_dict -> {word: index + 1}).
  Sources/PasswordStrength/Resources/adjacency_graphs.json
      ADJACENCY_GRAPHS verbatim: compact JSON, sorted keys, null for missing neighbours.
  Sources/PasswordStrength/Resources/LICENSE-zxcvbn.txt
  Sources/PasswordStrength/Resources/README.md   (provenance + sha256 of every generated file)

The script refuses to run against any zxcvbn version other than 4.5.0.
"""

import argparse
import hashlib
import importlib.metadata
import json
import os
import sys

EXPECTED_VERSION = "4.5.0"
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RESOURCES_REL = os.path.join("Sources", "PasswordStrength", "Resources")

DROPBOX_LICENSE = """\
Copyright (c) 2012-2016 Dan Wheeler and Dropbox, Inc.

Permission is hereby granted, free of charge, to any person obtaining
a copy of this software and associated documentation files (the
"Software"), to deal in the Software without restriction, including
without limitation the rights to use, copy, modify, merge, publish,
distribute, sublicense, and/or sell copies of the Software, and to
permit persons to whom the Software is furnished to do so, subject to
the following conditions:

The above copyright notice and this permission notice shall be
included in all copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND,
EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE
LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION
OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION
WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
"""


def fail(msg):
    sys.stderr.write("generate_resources: error: %s\n" % msg)
    sys.exit(2)


def load_package():
    try:
        version = importlib.metadata.version("zxcvbn")
    except importlib.metadata.PackageNotFoundError:
        fail("python package 'zxcvbn' is not installed (pip install zxcvbn==%s)" % EXPECTED_VERSION)
    if version != EXPECTED_VERSION:
        fail("zxcvbn %s installed, but exactly %s is required" % (version, EXPECTED_VERSION))
    import zxcvbn.adjacency_graphs as adjacency_graphs
    import zxcvbn.frequency_lists as frequency_lists
    import zxcvbn.matching as matching

    dist = importlib.metadata.distribution("zxcvbn")
    licence = None
    for f in dist.files or []:
        if os.path.basename(str(f)).upper().startswith("LICENSE"):
            licence = f.read_text(encoding="utf-8")
            break
    if licence is None:
        fail("could not find the LICENSE file in the zxcvbn dist-info")
    return version, frequency_lists.FREQUENCY_LISTS, adjacency_graphs.ADJACENCY_GRAPHS, matching, licence


def build_outputs():
    version, lists, graphs, matching, py_licence = load_package()
    outputs = {}  # relative path -> bytes (insertion order = README order)

    # --- frequency lists -------------------------------------------------------------
    list_info = []
    for name, words in lists.items():
        if not isinstance(words, list):
            fail("FREQUENCY_LISTS[%r] is not a list" % name)
        for w in words:
            if not isinstance(w, str) or w == "" or "\n" in w or "\r" in w:
                fail("FREQUENCY_LISTS[%r] contains an entry that cannot be stored one-per-line: %r" % (name, w))
        # The ranked dictionary the matcher really uses must equal "rank = line number".
        ranked = matching.build_ranked_dict(words)
        if len(ranked) != len(words) or any(ranked[w] != i + 1 for i, w in enumerate(words)):
            fail("FREQUENCY_LISTS[%r] has duplicates; rank != line number" % name)
        if matching.RANKED_DICTIONARIES.get(name) != ranked:
            fail("matching.RANKED_DICTIONARIES[%r] differs from build_ranked_dict(list)" % name)
        data = ("\n".join(words) + "\n").encode("utf-8")
        outputs[os.path.join("frequency_lists", name + ".txt")] = data
        list_info.append((name, len(words), words[0], words[-1]))

    # --- adjacency graphs ------------------------------------------------------------
    graph_json = json.dumps(graphs, sort_keys=True, separators=(",", ":"), ensure_ascii=True) + "\n"
    if json.loads(graph_json) != graphs:
        fail("adjacency graph JSON round-trip mismatch")
    outputs["adjacency_graphs.json"] = graph_json.encode("utf-8")
    graph_info = []
    for gname, g in graphs.items():
        degrees = sum(len([n for n in nb if n]) for nb in g.values())
        graph_info.append((gname, len(g), len(next(iter(g.values()))), degrees / float(len(g))))

    # --- licence -----------------------------------------------------------------------
    licence = (
        "The data files in this directory (frequency_lists/*.txt, adjacency_graphs.json)\n"
        "were extracted from the python package zxcvbn %s (https://github.com/dwolfhub/zxcvbn-python),\n"
        "a port of Dropbox's zxcvbn (https://github.com/dropbox/zxcvbn). Both are MIT licensed.\n"
        "\n"
        "==============================================================================\n"
        "zxcvbn (JavaScript original; source of the word lists and keyboard graphs)\n"
        "==============================================================================\n"
        "\n%s\n"
        "==============================================================================\n"
        "zxcvbn-python %s (LICENSE.txt from the package's dist-info, verbatim)\n"
        "==============================================================================\n"
        "\n%s" % (version, DROPBOX_LICENSE, version, py_licence if py_licence.endswith("\n") else py_licence + "\n")
    )
    outputs["LICENSE-zxcvbn.txt"] = licence.encode("utf-8")

    # --- README (provenance) -------------------------------------------------------------
    lines = []
    lines.append("# PasswordStrength resources (zxcvbn data)")
    lines.append("")
    lines.append("Generated by `scripts/zxcvbn/generate_resources.py` from the installed python package")
    lines.append("`zxcvbn==%s` (PyPI, https://github.com/dwolfhub/zxcvbn-python), the MIT-licensed python port" % version)
    lines.append("of Dropbox's zxcvbn. Do not edit by hand. See `LICENSE-zxcvbn.txt`.")
    lines.append("")
    lines.append("Regenerate (from the repository root):")
    lines.append("")
    lines.append("```sh")
    lines.append("pip install zxcvbn==%s" % version)
    lines.append("python3 scripts/zxcvbn/generate_resources.py          # write")
    lines.append("python3 scripts/zxcvbn/generate_resources.py --check  # verify, exit 1 on drift")
    lines.append("```")
    lines.append("")
    lines.append("## Frequency lists")
    lines.append("")
    lines.append("`frequency_lists/<name>.txt`: UTF-8, one lowercase word per line, LF, trailing newline.")
    lines.append("Line N is rank N (python: `build_ranked_dict` = `{word: index + 1}`); no list has duplicates.")
    lines.append("The matcher iterates the dictionaries in this order (it decides tie order of matches),")
    lines.append("followed by the per-call `user_inputs` dictionary:")
    lines.append("")
    lines.append("| order | name | words | rank 1 | last |")
    lines.append("|---|---|---|---|---|")
    for idx, (name, count, first, last) in enumerate(list_info, 1):
        lines.append("| %d | %s | %d | `%s` | `%s` |" % (idx, name, count, first, last))
    lines.append("")
    lines.append("## Adjacency graphs")
    lines.append("")
    lines.append("`adjacency_graphs.json`: `{graph: {key: [neighbour, ...]}}`, keys sorted, `null` = no neighbour.")
    lines.append("The position in each neighbour list is the direction (it counts turns); in the 2-character")
    lines.append("qwerty/dvorak entries index 0 is unshifted and index 1 shifted. The spatial matcher visits the")
    lines.append("graphs in the order listed below (the package's order), not the sorted JSON order.")
    lines.append("")
    lines.append("| order | graph | keys | slots per key | average degree |")
    lines.append("|---|---|---|---|---|")
    for idx, (gname, keys, slots, deg) in enumerate(graph_info, 1):
        lines.append("| %d | %s | %d | %d | %r |" % (idx, gname, keys, slots, deg))
    lines.append("")
    lines.append("Scoring uses qwerty's values for qwerty/dvorak and keypad's values for keypad/mac_keypad.")
    lines.append("")
    lines.append("## SHA-256")
    lines.append("")
    lines.append("```")
    for rel in sorted(outputs):
        lines.append("%s  %s" % (hashlib.sha256(outputs[rel]).hexdigest(), rel.replace(os.sep, "/")))
    lines.append("```")
    lines.append("")
    outputs["README.md"] = "\n".join(lines).encode("utf-8")
    return outputs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=REPO_ROOT, help="repository root (default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="do not write; exit 1 if any file differs")
    args = ap.parse_args()

    outputs = build_outputs()
    out_dir = os.path.join(args.root, RESOURCES_REL)
    differing = []
    for rel, data in outputs.items():
        path = os.path.join(out_dir, rel)
        try:
            with open(path, "rb") as fh:
                same = fh.read() == data
        except FileNotFoundError:
            same = False
        if same:
            continue
        differing.append(rel)
        if not args.check:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(data)
    for rel, data in outputs.items():
        status = "differs" if rel in differing and args.check else ("written" if rel in differing else "unchanged")
        print("%-40s %9d bytes  %s" % (os.path.join(RESOURCES_REL, rel), len(data), status))
    if args.check and differing:
        sys.exit(1)


if __name__ == "__main__":
    main()
