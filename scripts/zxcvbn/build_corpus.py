#!/usr/bin/env python3
"""Build the zxcvbn reference fixtures for the PasswordStrength tests.

Usage (from the repository root):

    pip install zxcvbn==4.5.0
    python3 scripts/zxcvbn/build_corpus.py                   # build + evaluate + write fixtures
    python3 scripts/zxcvbn/build_corpus.py --corpus-only out.txt   # just dump the passwords (one per line)

It generates a deterministic (seeded) corpus of diverse passwords (each <= 72 code points,
python zxcvbn raises ValueError above that), runs python zxcvbn 4.5.0 on every entry and writes

  Tests/PasswordStrengthTests/Fixtures/zxcvbn-reference.json        (all entries)
  Tests/PasswordStrengthTests/Fixtures/zxcvbn-reference-smoke.json  (~300 entries sampled per kind)

Numbers are written exactly as python computed them: ints as ints, floats with repr() precision,
decimal.Decimal values (python 4.5.0 does its DP and crack-time arithmetic in Decimal, 28 digits)
as their exact str() -- always a valid JSON number literal. Indices i/j count Unicode code points
(python str indices), not UTF-16 units and not grapheme clusters.

No password contains "\\n" or "\\r" (so the corpus can be fed one-per-line). The empty password and
an over-long password are not entries (python raises); they are listed in "python_exceptions".

Determinism: only seeded random.Random, lists and insertion-ordered dicts are used (never sets),
so the same seed + same zxcvbn version gives byte-identical output.
"""

import argparse
import importlib.metadata
import json
import math
import os
import platform
import random
import re
import string
import sys
import time
import unicodedata
from decimal import Decimal

EXPECTED_VERSION = "4.5.0"
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES_REL = os.path.join("Tests", "PasswordStrengthTests", "Fixtures")
DEFAULT_SEED = 20240611
MAX_LEN = 72

if importlib.metadata.version("zxcvbn") != EXPECTED_VERSION:
    sys.stderr.write("build_corpus: zxcvbn %s required, found %s\n"
                     % (EXPECTED_VERSION, importlib.metadata.version("zxcvbn")))
    sys.exit(2)

from zxcvbn import zxcvbn  # noqa: E402
from zxcvbn import matching, scoring  # noqa: E402
from zxcvbn.adjacency_graphs import ADJACENCY_GRAPHS  # noqa: E402
from zxcvbn.frequency_lists import FREQUENCY_LISTS  # noqa: E402

PASSWORDS = FREQUENCY_LISTS["passwords"]
ENGLISH = FREQUENCY_LISTS["english_wikipedia"]
TV = FREQUENCY_LISTS["us_tv_and_film"]
FEMALE = FREQUENCY_LISTS["female_names"]
MALE = FREQUENCY_LISTS["male_names"]
SURNAMES = FREQUENCY_LISTS["surnames"]
ALPHA_WORDS = [w for w in ENGLISH if w.isalpha() and len(w) >= 3]
TV_WORDS = [w for w in TV if w.isalpha() and len(w) >= 3]

L33T_TABLE = matching.L33T_TABLE  # letter -> [l33t chars], python's exact table
L33T_PAIRS = [(letter, sub) for letter, subs in L33T_TABLE.items() for sub in subs]

CONSONANTS = "bcdfghjkmnpqrstvwxz"
VOWELS = "aeiouy"
PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " "
SYMBOLS = "!@#$%^&*()-_=+[]{};:'\",.<>/?\\|`~"
DATE_SEPARATORS = ["", "/", "-", ".", "_", " ", "\\"]


def skewed_rank(rng, n, lo=1):
    """A rank in [lo, n], log-uniform so that low and high ranks both appear."""
    return min(n, max(lo, int(round(math.exp(rng.uniform(math.log(lo), math.log(n)))))))


def pick(rng, lst, lo=1):
    return lst[skewed_rank(rng, len(lst), lo) - 1]


def capitalize_variant(rng, w):
    r = rng.random()
    if r < 0.35:
        return w
    if r < 0.6:
        return w[:1].upper() + w[1:]
    if r < 0.72:
        return w.upper()
    if r < 0.80:
        return w[:-1] + w[-1:].upper()
    if r < 0.90:
        return "".join(c.upper() if rng.random() < 0.4 else c for c in w)
    return "".join(c.upper() if k % 2 else c for k, c in enumerate(w))


def l33tify(rng, w, prob=0.7, pairs=None):
    out = []
    for c in w:
        lc = c.lower()
        if lc in L33T_TABLE and rng.random() < prob:
            choices = L33T_TABLE[lc]
            if pairs is not None:
                choices = [s for (l, s) in pairs if l == lc] or choices
            out.append(rng.choice(choices))
        else:
            out.append(c)
    return "".join(out)


def rand_year(rng):
    r = rng.random()
    if r < 0.45:
        return rng.randint(1950, 2030)
    if r < 0.7:
        return rng.randint(1900, 2050)
    if r < 0.9:
        return rng.randint(1000, 2050)
    return rng.choice([999, 2051, 2099, 3000, 1099, 100, 0])


def date_string(rng):
    year = rand_year(rng)
    month = rng.randint(1, 12) if rng.random() < 0.9 else rng.randint(0, 14)
    day = rng.randint(1, 31) if rng.random() < 0.9 else rng.randint(0, 35)
    sep = rng.choice(DATE_SEPARATORS)
    pad = rng.random() < 0.5
    two_digit_year = rng.random() < 0.4

    def f(v, width):
        return ("%0" + str(width) + "d") % v if pad else str(v)

    y = ("%02d" % (year % 100)) if two_digit_year else str(year)
    m, d = f(month, 2), f(day, 2)
    order = rng.choice(["dmy", "mdy", "ymd", "ydm", "dmy", "mdy"])
    parts = {"d": d, "m": m, "y": y}
    return sep.join(parts[k] for k in order)


# --------------------------------------------------------------------------------------
# keyboard walks
# --------------------------------------------------------------------------------------

def keyboard_walk(rng, graph_name, length, turn_prob, shift_prob):
    graph = ADJACENCY_GRAPHS[graph_name]
    keys = list(graph.keys())
    cur = rng.choice(keys)
    out = [cur]
    direction = None
    while len(out) < length:
        nbrs = graph.get(cur) or []
        valid = [k for k, n in enumerate(nbrs) if n]
        if not valid:
            break
        if direction is None or direction not in valid or rng.random() < turn_prob:
            direction = rng.choice(valid)
        nb = nbrs[direction]
        if len(nb) == 2 and rng.random() < shift_prob:
            cur = nb[1]
        else:
            cur = nb[0]
        out.append(cur)
    return "".join(out)


KNOWN_WALKS = [
    "qwerty", "qwertyuiop", "asdfgh", "asdfghjkl", "zxcvbn", "zxcvbnm", "1qaz2wsx", "qazwsx",
    "qazwsxedc", "!QAZ2wsx", "1qaz@WSX", "poiuytrewq", "lkjhgfdsa", "mnbvcxz", "qweasdzxc",
    "147258369", "789456123", "159753", "852456", "/*-+", "0147", "7896321", "aoeuidhtns",
    ",.pyfgcrl", "';qjkxbmwvz", "1234qwer", "qwer1234", "!@#$%^&*", "1q2w3e4r", "1q2w3e4r5t",
    "zaq12wsx", "xsw21qaz", "QWERTY", "Qwerty123", "asdf;lkj", "`1234567890-=", "~!@#$%^&*()_+",
    "[];'./", "{}:\"<>?", "=-09", "+_)(", "741852963", "9632587", "*/789", "1470258369",
    "qwertzuiop", "azerty", "yxcvbnm", "hjkl", "wasd", "ujmik,", "rfvtgb", "yhnujm", "edcrfv",
]


# --------------------------------------------------------------------------------------
# generators: each yields (password, user_inputs or None); the driver dedups and counts
# --------------------------------------------------------------------------------------

def gen_common_password(rng):
    r = rng.random()
    if r < 0.25:
        return PASSWORDS[rng.randint(0, 99)], None
    if r < 0.45:
        return PASSWORDS[rng.randint(100, 999)], None
    if r < 0.65:
        return PASSWORDS[rng.randint(1000, 9999)], None
    if r < 0.85:
        return PASSWORDS[rng.randint(10000, len(PASSWORDS) - 1)], None
    return capitalize_variant(rng, pick(rng, PASSWORDS)), None


def gen_dictionary_mutation(rng):
    src = rng.choice([ALPHA_WORDS, ALPHA_WORDS, TV_WORDS, PASSWORDS])
    w = pick(rng, src)
    r = rng.random()
    if r < 0.12:
        w = w[::-1]
    elif r < 0.2:
        w = capitalize_variant(rng, w)[::-1]
    else:
        w = capitalize_variant(rng, w)
    suffix_kind = rng.random()
    if suffix_kind < 0.2:
        w += str(rng.randint(0, 9))
    elif suffix_kind < 0.35:
        w += str(rng.randint(0, 99))
    elif suffix_kind < 0.5:
        w += str(rand_year(rng))
    elif suffix_kind < 0.62:
        w += rng.choice(SYMBOLS)
    elif suffix_kind < 0.72:
        w += str(rng.randint(0, 999)) + rng.choice(SYMBOLS)
    elif suffix_kind < 0.8:
        w = rng.choice(SYMBOLS + string.digits) + w
    elif suffix_kind < 0.86:
        w = str(rng.randint(0, 99)) + w + rng.choice(SYMBOLS)
    elif suffix_kind < 0.92:
        w += w[-1] * rng.randint(1, 4)
    return w, None


def gen_l33t(rng, _state={"k": 0}):
    # first sweep every (letter, l33t char) pair deterministically, then random mixes
    k = _state["k"]
    _state["k"] += 1
    src = rng.choice([ALPHA_WORDS, PASSWORDS, TV_WORDS, FEMALE, MALE, SURNAMES])
    if k < len(L33T_PAIRS) * 14:
        letter, sub = L33T_PAIRS[k % len(L33T_PAIRS)]
        cands = []
        for _ in range(200):
            w = pick(rng, src)
            if letter in w and w.isalpha():
                cands.append(w)
                break
        if not cands:
            w = pick(rng, [x for x in ALPHA_WORDS[:5000] if letter in x])
        else:
            w = cands[0]
        mode = rng.random()
        if mode < 0.5:
            w = w.replace(letter, sub)          # full substitution of that letter
        elif mode < 0.8:
            idx = [p for p, c in enumerate(w) if c == letter]
            p = rng.choice(idx)
            w = w[:p] + sub + w[p + 1:]         # a single substitution
        else:
            w = l33tify(rng, w, prob=0.5, pairs=[(letter, sub)])
        w = capitalize_variant(rng, w) if rng.random() < 0.3 else w
    else:
        w = pick(rng, src)
        w = l33tify(rng, w, prob=rng.choice([0.3, 0.6, 1.0]))
        if rng.random() < 0.3:
            w = capitalize_variant(rng, w)
        if rng.random() < 0.25:
            w += rng.choice(["1", "!", "123", "2024", "$", "@", "69", "7"])
        if rng.random() < 0.08:
            w = w[::-1]
    return w, None


def gen_date(rng):
    d = date_string(rng)
    r = rng.random()
    if r < 0.55:
        return d, None
    if r < 0.75:
        return pick(rng, ALPHA_WORDS) + d, None
    if r < 0.85:
        return d + pick(rng, FEMALE + MALE).capitalize(), None
    if r < 0.93:
        return d + rng.choice(SYMBOLS), None
    return date_string(rng) + rng.choice(["", "-", "_"]) + date_string(rng), None


def gen_recent_year(rng):
    year = rng.randint(1890, 2035)
    r = rng.random()
    if r < 0.3:
        return str(year), None
    if r < 0.6:
        return capitalize_variant(rng, pick(rng, ALPHA_WORDS)) + str(year), None
    if r < 0.75:
        return str(year) + pick(rng, PASSWORDS[:2000]), None
    if r < 0.9:
        return str(year) + rng.choice(SYMBOLS) + str(rng.randint(1900, 2030)), None
    return "".join(str(rng.randint(1900, 2025)) for _ in range(rng.randint(2, 4))), None


def gen_keyboard_walk(rng):
    r = rng.random()
    if r < 0.15:
        w = rng.choice(KNOWN_WALKS)
        if rng.random() < 0.4:
            w = w + rng.choice(["", "1", "!", "123", str(rng.randint(0, 99))])
        return w, None
    graph = rng.choice(["qwerty", "qwerty", "dvorak", "keypad", "mac_keypad"])
    length = rng.choice([3, 4, 5, 6, 6, 7, 8, 8, 9, 10, 12, 14, 16, 20])
    w = keyboard_walk(rng, graph, length, turn_prob=rng.choice([0.0, 0.1, 0.3, 0.6]),
                      shift_prob=rng.choice([0.0, 0.0, 0.2, 0.5, 1.0]))
    if r > 0.85:
        w += rng.choice([pick(rng, ALPHA_WORDS), str(rng.randint(0, 9999)),
                         keyboard_walk(rng, rng.choice(list(ADJACENCY_GRAPHS)), 4, 0.2, 0.2)])
    return w, None


def gen_names(rng):
    first = pick(rng, rng.choice([FEMALE, MALE]))
    last = pick(rng, SURNAMES)
    sep = rng.choice(["", "", ".", "_", "-", " "])
    r = rng.random()
    if r < 0.3:
        w = capitalize_variant(rng, first) + sep + capitalize_variant(rng, last)
    elif r < 0.5:
        w = capitalize_variant(rng, first) + str(rng.choice([rng.randint(0, 99), rand_year(rng)]))
    elif r < 0.65:
        w = first[0] + last
    elif r < 0.75:
        w = capitalize_variant(rng, last) + sep + first
    elif r < 0.85:
        w = first + sep + pick(rng, rng.choice([FEMALE, MALE]))
    else:
        w = capitalize_variant(rng, first) + rng.choice(["loves", "&", "+", "4", "and"]) + \
            capitalize_variant(rng, pick(rng, rng.choice([FEMALE, MALE])))
    return w, None


def gen_repeat(rng):
    r = rng.random()
    if r < 0.2:
        w = rng.choice(PRINTABLE) * rng.randint(2, 20)
    elif r < 0.4:
        base = "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(rng.randint(2, 5)))
        w = base * rng.randint(2, 5)
    elif r < 0.6:
        base = pick(rng, rng.choice([ALPHA_WORDS, PASSWORDS[:3000]]))
        w = base * rng.randint(2, 4)
    elif r < 0.7:
        w = rng.choice(["aabaab", "aabaabaabaab", "abab", "ababab", "121212", "123123123",
                        "abcabcabc", "xyzxyz", "!!!!", "zzzzzz", "1111", "aaaaaaaaaa",
                        "😀😀😀", "ßßßß", "ааа", "ééé", "abcabcab", "aaaab", "baaaa", "🔑🔑"])
        w = w + (str(rng.randint(0, 99)) if rng.random() < 0.3 else "")
    elif r < 0.85:
        base = rng.choice(PRINTABLE) * rng.randint(3, 6)
        w = pick(rng, ALPHA_WORDS) + base if rng.random() < 0.5 else base + pick(rng, ALPHA_WORDS)
    else:
        sub = capitalize_variant(rng, pick(rng, ALPHA_WORDS)) + str(rng.randint(0, 9))
        w = sub * rng.randint(2, 3)
    return w[:MAX_LEN] if len(w) > MAX_LEN and rng.random() < 0.5 else w, None


UNICODE_RUNS = [
    "αβγδεζηθικλμνξοπρστυφχψω", "ΑΒΓΔΕΖΗΘΙΚΛΜΝ", "абвгдежзийклмноп", "АБВГДЕЖЗИЙ",
    "あいうえお", "ぁあぃいぅうぇえぉお", "אבגדהוזחט", "①②③④⑤⑥", "ⅠⅡⅢⅣⅤ", "０１２３４５６７８９",
    "ａｂｃｄｅｆ", "가각갂갃간", "一丁丂七丄丅", "😀😁😂🤣😃", "♠♡♢♣",
]


def gen_sequence(rng):
    r = rng.random()
    if r < 0.5:
        alphabet = rng.choice([string.ascii_lowercase, string.ascii_uppercase, string.digits])
        delta = rng.choice([1, 1, 1, 2, 3, 4, 5, 6, -1, -1, -2, -3, -5])
        length = rng.randint(2, 12)
        start = rng.randrange(len(alphabet))
        idxs = [start + k * delta for k in range(length)]
        idxs = [x for x in idxs if 0 <= x < len(alphabet)]
        if len(idxs) < 2:
            idxs = [0, 1, 2]
        w = "".join(alphabet[x] for x in idxs)
    elif r < 0.7:
        run = rng.choice(UNICODE_RUNS)
        a = rng.randrange(len(run) - 1)
        b = rng.randint(a + 2, len(run))
        w = run[a:b]
        if rng.random() < 0.3:
            w = w[::-1]
    elif r < 0.85:
        w = rng.choice(["abc", "abcd", "abcdef", "abcdefghijklmnopqrstuvwxyz", "zyx", "zyxwvu",
                        "0123", "123456789", "9876", "987654321", "13579", "97531", "acegi",
                        "ZYXWV", "ABCDEFG", "2468", "86420", "1234567890", "zyxwvutsrqponmlkjihgfedcba",
                        "xyz", "XYZ", "ace", "bdfhj", "0369", "aeimquy", "adgjm", "!\"#$%&", "~}|{",
                        "+-", "+-+-", "./0123", "9:;<="])
    else:
        w = gen_sequence(rng)[0] + rng.choice([pick(rng, ALPHA_WORDS), str(rng.randint(0, 999)),
                                                rng.choice(SYMBOLS), gen_sequence(rng)[0]])
    return w, None


def gen_random(rng):
    charset = rng.choice([string.ascii_lowercase, string.ascii_letters,
                          string.ascii_letters + string.digits, PRINTABLE, string.digits,
                          string.ascii_lowercase + string.digits, "0123456789abcdef"])
    r = rng.random()
    if r < 0.3:
        length = rng.randint(1, 8)
    elif r < 0.75:
        length = rng.randint(8, 24)
    else:
        length = rng.randint(24, MAX_LEN)
    return "".join(rng.choice(charset) for _ in range(length)), None


def gen_passphrase(rng):
    n = rng.choice([2, 2, 3, 3, 4, 4, 5, 6])
    src = rng.choice([ALPHA_WORDS, ALPHA_WORDS, TV_WORDS])
    words = [pick(rng, src, lo=rng.choice([1, 1, 100, 1000])) for _ in range(n)]
    style = rng.random()
    if style < 0.3:
        words = [w.capitalize() for w in words]
    elif style < 0.35:
        words = [w.upper() for w in words]
    sep = rng.choice(["", "", " ", " ", "-", "_", ".", ",", "+", "1"])
    w = sep.join(words)
    if rng.random() < 0.2:
        w += rng.choice([str(rng.randint(0, 99)), "!", str(rand_year(rng)), "?"])
    if len(w) > MAX_LEN:
        w = w[:MAX_LEN]
    return w, None


def gen_apple(rng):
    letters = []
    for _ in range(5):
        letters += [rng.choice(CONSONANTS), rng.choice(VOWELS), rng.choice(CONSONANTS)]
    letters += [rng.choice(CONSONANTS), rng.choice(VOWELS)]  # 17 letters
    up = rng.randrange(len(letters))
    letters[up] = letters[up].upper()
    pos = rng.choice([0, 5, 6, 11, 12, 17])
    chars = letters[:pos] + [rng.choice(string.digits)] + letters[pos:]  # 18 chars
    s = "".join(chars)
    return s[0:6] + "-" + s[6:12] + "-" + s[12:18], None


NON_ASCII_WORDS = [
    "café", "naïve", "résumé", "Müller", "straße", "STRASSE", "contraseña", "mañana", "señor",
    "garçon", "crème", "brûlée", "façade", "jalapeño", "smørrebrød", "Ærøskøbing", "Łódź",
    "Ελλάδα", "ΣΟΦΙΑ", "σοφία", "пароль", "Пароль", "привет", "密码", "你好世界", "パスワード",
    "こんにちは", "비밀번호", "سلام", "שלום", "नमस्ते", "ประเทศไทย", "İstanbul", "ıi", "ǅemal",
    "ﬁnance", "Ǆ", "ẞ", "e\u0301te\u0301", "n\u0303o", "😀", "🔑", "🔒🔑", "I❤️NY", "👨‍👩‍👧",
    "🇫🇷", "❤", "☃snow", "ꙮ", "𝔭𝔞𝔰𝔰", "ＰＡＳＳ", "ｐａｓｓｗｏｒｄ", "١٩٩١", "١٢/٠٥/١٩٨٧",
    "१९९०", "１９９１", "19٩٩", "٢٠١٥", "Ⅻ", "½", "²³", "ǈ", "ÀÉÎÕÜ", "àéîõü",
]


def gen_non_ascii(rng):
    r = rng.random()
    w = rng.choice(NON_ASCII_WORDS)
    if r < 0.3:
        return w, None
    if r < 0.5:
        return w + rng.choice([str(rng.randint(0, 9999)), "!", rng.choice(NON_ASCII_WORDS)]), None
    if r < 0.65:
        return capitalize_variant(rng, pick(rng, ALPHA_WORDS)) + w, None
    if r < 0.75:
        return unicodedata.normalize(rng.choice(["NFC", "NFD", "NFKC", "NFKD"]), w) + str(rng.randint(0, 99)), None
    if r < 0.85:
        accented = "àáâãäåèéêëìíîïòóôõöùúûüýÿñçøæœß"
        return "".join(rng.choice(accented + string.ascii_lowercase) for _ in range(rng.randint(3, 16))), None
    if r < 0.93:
        block = rng.choice([(0x4E00, 0x9FFF), (0x0400, 0x04FF), (0x0370, 0x03FF), (0x1F300, 0x1F64F),
                            (0x3040, 0x309F), (0xAC00, 0xD7A3), (0x0600, 0x06FF)])
        return "".join(chr(rng.randint(*block)) for _ in range(rng.randint(1, 12))), None
    return w.upper() + w.lower() + w[::-1], None


EDGE_FIXED = [
    " ", "  ", "   ", "\t", "a", "A", "1", "!", "Z", "z", "0", "9", "ab", "aa", "a1", "1a", ".",
    " a", "a ", " password ", "pass word", "PASSWORD", "Password", "passworD", "pAssword",
    "pAsSwOrD", "drowssap", "DROWSSAP", "p@ssw0rd", "P@$$w0rd", "Tr0ub4dour&3",
    "correcthorsebatterystaple", "Correct Horse Battery Staple", "0", "00", "000", "0000",
    "01", "10", "12", "21", "123", "1234", "12345", "a" * MAX_LEN, "ab" * 36,
    "1" * MAX_LEN, "x" * 71, "\\", "\\\\", "\"", "'", "`", "~", "\u00a0", "\u3000", "a\u00a0b",
    "1\u00a01\u00a091", "1\u20031\u200391", "1\x0b1\x0b91", "1\x1c1\x1c91", "1\t1\t91",
    "\x00", "a\x00b", "\x7f", "\u200b", "a\u200db", "\ufeff", "constructor", "__proto__",
    "toString", "hasOwnProperty", "valueOf", "prototype", "undefined", "null", "NaN",
    "Infinity", "true", "false", "None", "1e308", "-1", "0x10", "1/1/1", "1/1/1991",
    "31/12/2050", "1/1/2051", "01011000", "12/31/999", "0/0/0", "99/99/99", "2017", "2016",
    "2018", "1997", "1917", "2000", "2009", "2010", "2019", "2020", "2029", "1900", "1899",
    "19999", "20011", "a1b2c3", "1a2b3c", "abcABC", "ABCabc", "aBcDeF", "zZ", "Zz", "AZ",
]


def gen_edge(rng, _state={"k": 0}):
    k = _state["k"]
    _state["k"] += 1
    if k < len(EDGE_FIXED):
        return EDGE_FIXED[k], None
    r = rng.random()
    if r < 0.4:
        return rng.choice(PRINTABLE), None
    if r < 0.7:
        return "".join(rng.choice(PRINTABLE) for _ in range(rng.randint(2, 3))), None
    if r < 0.85:
        return " " * rng.randint(1, 8) + pick(rng, ALPHA_WORDS) + " " * rng.randint(0, 3), None
    length = rng.choice([70, 71, 72])
    return "".join(rng.choice(PRINTABLE) for _ in range(length)), None


FIRST_NAMES = FEMALE[:400] + MALE[:300]
DOMAINS = ["example.com", "keyhaven.app", "gmail.com", "yahoo.com", "acme.io", "mail.ru", "web.de",
           "company.co.uk", "outlook.com", "proton.me"]


def make_user_inputs(rng):
    first = rng.choice(FIRST_NAMES)
    last = pick(rng, SURNAMES)
    domain = rng.choice(DOMAINS)
    username = rng.choice([first + last, first[0] + last, first + str(rng.randint(1, 99)),
                           last + first[0], first + "." + last, first + "_" + last[:3]])
    email = rng.choice([first + "." + last, username, first[0] + last]) + "@" + domain
    inputs = []
    r = rng.random()
    if r < 0.5:
        inputs = [username, email]
    elif r < 0.7:
        inputs = [first.capitalize(), last.capitalize(), email, domain.split(".")[0]]
    elif r < 0.85:
        inputs = [email, domain, domain.split(".")[0], username.upper()]
    elif r < 0.95:
        inputs = [username, email, first, last, str(rng.randint(1950, 2010)), "Keyhaven"]
    else:
        inputs = [username, username.capitalize(), username]  # duplicates: last index wins
    return inputs


def gen_user_inputs(rng):
    inputs = make_user_inputs(rng)
    target = rng.choice([i for i in inputs if i])
    r = rng.random()
    if r < 0.25:
        w = target
    elif r < 0.45:
        w = capitalize_variant(rng, target) + rng.choice(["1", "!", "123", str(rand_year(rng)), "2024!", ""])
    elif r < 0.55:
        w = target[::-1]
    elif r < 0.65:
        w = l33tify(rng, target, prob=0.6)
    elif r < 0.75:
        w = rng.choice(SYMBOLS) + target.upper() + str(rng.randint(0, 99))
    elif r < 0.85:
        w = target + pick(rng, ALPHA_WORDS) + str(rng.randint(0, 999))
    else:
        w = gen_passphrase(rng)[0]  # inputs not contained in the password
    return w[:MAX_LEN], inputs


def gen_combo(rng):
    parts = []
    for _ in range(rng.randint(2, 4)):
        g = rng.choice([gen_dictionary_mutation, gen_l33t, gen_date, gen_keyboard_walk, gen_names,
                        gen_sequence, gen_repeat, gen_recent_year, gen_common_password])
        parts.append(g(rng)[0])
    w = rng.choice(["", "", "-", "_", "!", " ", "."]).join(parts)
    return w, None


GENERATORS = [
    # kind, generator, target count
    ("common_password", gen_common_password, 1000),
    ("dictionary_mutation", gen_dictionary_mutation, 1200),
    ("l33t", gen_l33t, 1200),
    ("date", gen_date, 950),
    ("recent_year", gen_recent_year, 350),
    ("keyboard_walk", gen_keyboard_walk, 950),
    ("names", gen_names, 700),
    ("repeat", gen_repeat, 650),
    ("sequence", gen_sequence, 600),
    ("random", gen_random, 1200),
    ("passphrase", gen_passphrase, 850),
    ("apple_generated", gen_apple, 450),
    ("non_ascii", gen_non_ascii, 600),
    ("edge", gen_edge, 300),
    ("user_inputs", gen_user_inputs, 800),
    ("combo", gen_combo, 800),
]
EXTRA_USER_INPUTS_FRACTION = 0.03  # sprinkle user_inputs on other kinds too (~10% overall)


def acceptable(pw):
    return 0 < len(pw) <= MAX_LEN and "\n" not in pw and "\r" not in pw


def build_corpus(seed):
    rng = random.Random(seed)
    seen = {}
    corpus = []
    for kind, gen, target in GENERATORS:
        produced = 0
        attempts = 0
        while produced < target and attempts < target * 50:
            attempts += 1
            pw, inputs = gen(rng)
            if not acceptable(pw):
                continue
            if inputs is None and kind != "edge" and rng.random() < EXTRA_USER_INPUTS_FRACTION:
                inputs = make_user_inputs(rng)
            key = (pw, tuple(inputs) if inputs else ())
            if key in seen:
                continue
            seen[key] = True
            corpus.append((kind, pw, inputs))
            produced += 1
        if produced < target:
            sys.stderr.write("warning: kind %s produced only %d of %d\n" % (kind, produced, target))
    return corpus


# --------------------------------------------------------------------------------------
# exact JSON serialisation (ints, repr floats, exact Decimals)
# --------------------------------------------------------------------------------------

JSON_NUMBER = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$")


def num(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError("non-finite float %r" % v)
        s = repr(v)
    elif isinstance(v, Decimal):
        if not v.is_finite():
            raise ValueError("non-finite Decimal %r" % v)
        s = str(v)
    else:
        raise TypeError(type(v))
    if not JSON_NUMBER.match(s):
        raise ValueError("not a JSON number literal: %r" % s)
    return s


def enc(v):
    if v is None:
        return "null"
    if isinstance(v, (bool, int, float, Decimal)):
        return num(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(enc(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + enc(x) for k, x in v.items()) + "}"
    raise TypeError(type(v))


PATTERN_FIELDS = {
    "dictionary": ["matched_word", "rank", "dictionary_name", "reversed", "l33t", "sub", "sub_display",
                   "base_guesses", "uppercase_variations", "l33t_variations"],
    "spatial": ["graph", "turns", "shifted_count"],
    "repeat": ["base_token", "base_guesses", "repeat_count"],
    "sequence": ["sequence_name", "sequence_space", "ascending"],
    "regex": ["regex_name"],
    "date": ["separator", "year", "month", "day"],
    "bruteforce": [],
}


# Fields that are derivable from the others; left out of the big file to keep it small
# (the smoke file keeps everything). dictionary: base_guesses == rank, matched_word ==
# lower(token) un-l33ted (and reversed); the variations are recomputable from token/sub.
SLIM_DROP = {"matched_word", "base_guesses", "uppercase_variations", "l33t_variations"}


def match_record(m, full=True, depth=0):
    rec = {"pattern": m["pattern"], "i": m["i"], "j": m["j"], "token": m["token"]}
    if full:
        rec["guesses"] = m["guesses"]
    rec["guesses_log10"] = m["guesses_log10"]
    for f in PATTERN_FIELDS[m["pattern"]]:
        if f in m and (full or f not in SLIM_DROP):
            rec[f] = m[f]
    if m["pattern"] == "repeat" and depth == 0 and full:
        rec["base_matches"] = [match_record(b, full=False, depth=1) for b in m["base_matches"]]
    return rec


def slim_entry(e):
    """The big-file form of an entry: per-match 'guesses', derivable dictionary fields and
    repeat base_matches removed (guesses_log10 and the pattern-specific fields stay)."""
    out = dict(e)
    seq = []
    for m in e["sequence"]:
        m = {k: v for k, v in m.items() if k != "guesses" and k not in SLIM_DROP and k != "base_matches"}
        seq.append(m)
    out["sequence"] = seq
    # Crack times follow from `guesses` by four fixed divisions; the smoke file keeps them.
    out.pop("crack_times_seconds", None)
    out.pop("crack_times_display", None)
    return out


def evaluate(kind, pw, inputs, full=True):
    r = zxcvbn(pw, user_inputs=inputs) if inputs else zxcvbn(pw)
    e = {"kind": kind, "password": pw}
    if inputs:
        e["user_inputs"] = list(inputs)
    e["score"] = r["score"]
    e["guesses"] = r["guesses"]
    e["guesses_log10"] = r["guesses_log10"]
    e["sequence"] = [match_record(m, full=full) for m in r["sequence"]]
    e["feedback"] = {"warning": r["feedback"]["warning"], "suggestions": list(r["feedback"]["suggestions"])}
    e["crack_times_seconds"] = dict(r["crack_times_seconds"])
    e["crack_times_display"] = dict(r["crack_times_display"])
    return e


def python_exceptions():
    out = []
    for pw, inputs in [("", None), ("a" * (MAX_LEN + 1), None)]:
        try:
            zxcvbn(pw, user_inputs=inputs)
            out.append({"password": pw, "error": None})
        except Exception as exc:  # record exactly what python does
            out.append({"password": pw, "error": "%s: %s" % (type(exc).__name__, exc)})
    return out


def document(entries, seed, note_extra=None):
    head = {
        "generator": "scripts/zxcvbn/build_corpus.py --seed %d" % seed,
        "zxcvbn_version": importlib.metadata.version("zxcvbn"),
        "python_version": platform.python_version(),
        "reference_year": scoring.REFERENCE_YEAR,
        "reference_year_note": "python zxcvbn 4.5.0 hard-codes scoring.REFERENCE_YEAR = 2017 "
                               "(it does not use datetime.now()); date/regex guesses and date "
                               "candidate selection use it",
        "max_length": MAX_LEN,
        "number_format": "ints as ints; python floats as repr(); decimal.Decimal values (top-level "
                         "guesses, repeat-match guesses/base_guesses, crack_times_seconds) as exact "
                         "str(Decimal)",
        "index_unit": "unicode code points (python str indices)",
        "python_exceptions": python_exceptions(),
        "count": len(entries),
    }
    if note_extra:
        head.update(note_extra)
    lines = ["{"]
    for k, v in head.items():
        lines.append("  %s: %s," % (json.dumps(k), enc(v)))
    lines.append('  "entries": [')
    for n, e in enumerate(entries):
        lines.append("    " + enc(e) + ("," if n + 1 < len(entries) else ""))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def smoke_sample(entries, seed, total=300):
    rng = random.Random(seed + 1)
    by_kind = {}
    for idx, e in enumerate(entries):
        by_kind.setdefault(e["kind"], []).append(idx)
    kinds = list(by_kind)
    per_kind = {k: max(8, round(total * len(v) / len(entries))) for k, v in by_kind.items()}
    chosen = []
    for k in kinds:
        chosen += rng.sample(by_kind[k], min(per_kind[k], len(by_kind[k])))
    chosen.sort()
    return [entries[i] for i in chosen]


def main():
    ap = argparse.ArgumentParser(description="Build zxcvbn reference fixtures from python zxcvbn 4.5.0")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--root", default=REPO_ROOT)
    ap.add_argument("--corpus-only", metavar="FILE", help="write passwords one per line to FILE and stop")
    ap.add_argument("--full", action="store_true",
                    help="keep every per-match field in the big file too (default: slim big file, full smoke file)")
    args = ap.parse_args()

    corpus = build_corpus(args.seed)
    if args.corpus_only:
        with open(args.corpus_only, "w", encoding="utf-8", newline="\n") as fh:
            for _, pw, _ in corpus:
                fh.write(pw + "\n")
        print("wrote %d passwords to %s" % (len(corpus), args.corpus_only))
        return

    t0 = time.time()
    entries = []
    for n, (kind, pw, inputs) in enumerate(corpus):
        entries.append(evaluate(kind, pw, inputs))
        if (n + 1) % 2000 == 0:
            sys.stderr.write("  evaluated %d/%d (%.0fs)\n" % (n + 1, len(corpus), time.time() - t0))

    out_dir = os.path.join(args.root, FIXTURES_REL)
    os.makedirs(out_dir, exist_ok=True)
    big = document(entries if args.full else [slim_entry(e) for e in entries], args.seed,
                   {"per_match_fields": "full" if args.full else
                    "slim: no per-match guesses / matched_word / dictionary base_guesses / "
                    "uppercase_variations / l33t_variations / repeat base_matches / crack_times (see the smoke file)"})
    smoke = document(smoke_sample(entries, args.seed), args.seed,
                     {"per_match_fields": "full (repeat base_matches are slim)",
                      "note": "sample of zxcvbn-reference.json (same generator and seed)"})
    for name, text in [("zxcvbn-reference.json", big), ("zxcvbn-reference-smoke.json", smoke)]:
        json.loads(text)  # sanity: valid JSON
        path = os.path.join(out_dir, name)
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        print("%s: %d bytes" % (os.path.join(FIXTURES_REL, name), len(text.encode("utf-8"))))

    # summary
    kinds = {}
    scores = {}
    with_inputs = 0
    for e in entries:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
        scores[e["score"]] = scores.get(e["score"], 0) + 1
        with_inputs += 1 if "user_inputs" in e else 0
    print("entries: %d (with user_inputs: %d)  evaluation time %.1fs" % (len(entries), with_inputs, time.time() - t0))
    for k, v in kinds.items():
        ks = [0] * 5
        for e in entries:
            if e["kind"] == k:
                ks[e["score"]] += 1
        print("  %-20s %5d  scores 0-4: %s" % (k, v, ks))
    print("score distribution: %s" % [scores.get(s, 0) for s in range(5)])


if __name__ == "__main__":
    main()
