#!/usr/bin/env python3
"""Regenerates the import fixtures in this folder (deterministic: same output on every run).

    python3 Tests/VaultTests/Fixtures/imports/generate.py

Every export sample is written from one canonical list of credentials (CANON below), in the shape each
password manager writes; each sample gets a `<name>.expected.json` with what the importer should
produce. The shapes and the reasons behind them are in docs/import-formats.md. Only the Python
standard library is used.
"""

import base64
import hashlib
import json
import os
import random
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------------------------------------
# Canonical content
# ---------------------------------------------------------------------------------------------

NOTES_TRICKY = 'Zürich “quotes”, "straight" quotes, commas, semi;colons\nline2: Grüße – ✓'
PASSWORD_TRICKY = '  p@ss, "w;rd"'
TOTP_BARE = "JBSWY3DPEHPK3PXP"
TOTP_URI_SECRET = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
TOTP_URI = (
    "otpauth://totp/Example%20Mail:alice%40example.com?secret=" + TOTP_URI_SECRET
    + "&issuer=Example%20Mail&algorithm=SHA1&digits=6&period=30"
)

CANON = [
    dict(ref="C01", title="GitHub", urls=["https://github.com/login"], user="alice@example.com",
         password="gH7#qL2v!Rm9xT4e", notes="", totp=None, folder=None,
         covers="plain login"),
    dict(ref="C02", title="Bank Zürich", urls=["https://ebanking.bank-zuerich.example/login"], user="alice.m",
         password="Xk2$mP9wLq4zR7bN", notes=NOTES_TRICKY, totp=None, folder=None,
         covers="notes with commas, straight and curly quotes, semicolons, a newline, non-ASCII"),
    dict(ref="C03", title="Dropbox", urls=["https://www.dropbox.com/login"], user="alice@example.com",
         password="Dr0pb0x-Tq8vN3!w", notes="", totp=TOTP_BARE, folder=None,
         covers="TOTP as a bare base32 secret"),
    dict(ref="C04", title="Example Mail", urls=["https://mail.example.com/"], user="alice@example.com",
         password="M4il#Zx9pQ2vK7sD", notes="", totp=TOTP_URI, folder=None,
         covers="TOTP as an otpauth:// URI"),
    dict(ref="C05", title="Example Shop", urls=["https://shop.example.com/login", "https://checkout.example.com/"],
         user="shopper42", password="Sh0p!Vw8rT2yL5nK", notes="", totp=None, folder=None,
         covers="several URLs"),
    dict(ref="C06", title="Example App", urls=["androidapp://com.example.app"], user="alice@example.com",
         password="4ndr0id#Jk3mW9qZ", notes="", totp=None, folder=None,
         covers="Android app instead of a website"),
    dict(ref="C07", title="Home Router", urls=["https://router.example.net/"], user="",
         password="R0uter!Adm1n#2024", notes="", totp=None, folder=None,
         covers="empty username"),
    dict(ref="C08", title="Forum", urls=["https://forum.example.org/login"], user="bob_forum",
         password=PASSWORD_TRICKY, notes="", totp=None, folder=None,
         covers="password with leading spaces, comma, double quotes, semicolon"),
    dict(ref="C09", title="Work VPN", urls=["https://vpn.corp.example.com/"], user="alice.work",
         password="VPN-7c4Rq!m2Xz8L", notes="", totp=None, folder="Work/VPN",
         covers="credential in a nested folder/group"),
    dict(ref="C10", title="Legacy Intranet", urls=["http://legacy.example.net/login"], user="admin",
         password="L3gacy&Http#91zP", notes="", totp=None, folder=None,
         covers="http:// (not https) URL"),
    dict(ref="C11", title="Example Org", urls=["example.org"], user="carol",
         password="Ex0rg!Pw7vB3nQ5m", notes="", totp=None, folder=None,
         covers="domain without a scheme"),
    dict(ref="C12", dup_of="C01", covers="exact duplicate of C01 (must be merged)"),
]
BY_REF = {c["ref"]: c for c in CANON}


def canon(ref):
    c = BY_REF[ref]
    return BY_REF[c["dup_of"]] if "dup_of" in c else c


NOTE_ITEM = dict(ref="N1", title="Recovery codes",
                 content="GitHub recovery codes:\n1a2b3-4c5d6\n7e8f9-0a1b2")
CARD_ITEM = dict(ref="N2", title="Visa ending 1111", holder="Alice Example", number="4111111111111111",
                 brand="Visa", code="123", exp_month="6", exp_year="2027")

# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def rng_for(name):
    return random.Random("keyhaven-import-fixtures/" + name)


def det_uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def write_bytes(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def write_json(name, obj, trailing_newline=True, indent=2):
    text = json.dumps(obj, ensure_ascii=False, indent=indent)
    if trailing_newline:
        text += "\n"
    write_bytes(name, text.encode("utf-8"))


def csv_text(records, quote, eol, final_eol=True):
    """records: list of lists of (str | None). Returns (text, start_line_of_each_record)."""
    out = []
    starts = []
    line = 1
    for rec in records:
        starts.append(line)
        s = ",".join(quote(v) for v in rec)
        out.append(s)
        line += s.count("\n") + 1
    text = eol.join(out)
    if final_eol:
        text += eol
    return text, starts


def quote_when_needed(chars):
    def q(v):
        v = "" if v is None else v
        if any(c in v for c in chars):
            return '"' + v.replace('"', '""') + '"'
        return v
    return q


def quote_papaparse(v):
    # Papa.unparse default: quote when the value holds the quote char, the delimiter, CR or LF,
    # or starts or ends with a space. null/undefined become an empty, unquoted field.
    v = "" if v is None else v
    if any(c in v for c in '",\r\n') or v.startswith(" ") or v.endswith(" "):
        return '"' + v.replace('"', '""') + '"'
    return v


def quote_always(v):
    return '"' + ("" if v is None else v).replace('"', '""') + '"'


def quote_firefox(v):
    # LoginExport: every non-null value is quoted (numbers too); null becomes an empty field.
    if v is None:
        return ""
    return '"' + str(v).replace('"', '""') + '"'


def cred(ref, title, services, user, password, notes="", totp=None, folder=None):
    return dict(ref=ref, title=title, services=services, user=user, password=password,
                notes=notes, totp=totp, folder=folder)


def expected(source, fmt, creds, skipped, warnings=None, extra=None):
    """Merges exact duplicates (every compared field equal) into the first occurrence."""
    out = []
    seen = set()
    merged = 0
    for c in creds:
        key = json.dumps([c["title"], c["services"], c["user"], c["password"], c["notes"], c["totp"],
                          c["folder"]], ensure_ascii=False)
        if key in seen:
            merged += 1
            continue
        seen.add(key)
        out.append(c)
    doc = {"source": source, "format": fmt, "credentials": out, "skipped": skipped,
           "duplicatesMerged": merged}
    if warnings is not None:
        doc["warnings"] = warnings
    if extra:
        doc.update(extra)
    return doc


def host_of(url):
    rest = url.split("://", 1)[1]
    return rest.split("/", 1)[0]


def origin_of(url):
    scheme = url.split("://", 1)[0]
    return scheme + "://" + host_of(url)


def strip_prefixes(host, prefixes=("www.",)):
    for p in prefixes:
        if host.startswith(p):
            return host[len(p):]
    return host


ANDROID_CERT_HASH = base64.urlsafe_b64encode(hashlib.sha256(b"keyhaven fixture signing cert").digest()).decode()

LOGIN_REFS = [c["ref"] for c in CANON]

# ---------------------------------------------------------------------------------------------
# Chrome / Edge
# ---------------------------------------------------------------------------------------------


def chrome_rows(with_note):
    rows = []
    for ref in LOGIN_REFS:
        c = canon(ref)
        if c["urls"] == ["example.org"]:
            continue  # Chrome only stores http(s) and android facets; it never writes a bare domain
        for u in c["urls"]:
            if u.startswith("androidapp://"):
                pkg = u.split("://", 1)[1]
                name = ".".join(reversed(pkg.split(".")))  # no Play Store name known: reversed package
                url = "android://" + ANDROID_CERT_HASH + "@" + pkg + "/"
                service = u
            else:
                name = strip_prefixes(host_of(u), ("m.", "mobile.", "www."))
                url = u
                service = u
            row = [name, url, c["user"], c["password"]] + ([c["notes"]] if with_note else [])
            rows.append((row, ref, service))
    rows.sort(key=lambda r: r[0])  # Chrome sorts records by name, url, username, password, note
    return rows


def gen_chrome():
    for fname, with_note, eol in (("chrome.csv", True, "\n"), ("chrome-old.csv", False, "\r\n")):
        rows = chrome_rows(with_note)
        header = ["name", "url", "username", "password"] + (["note"] if with_note else [])
        text, _ = csv_text([header] + [r[0] for r in rows], quote_when_needed('\r\n",'), eol)
        write_bytes(fname, text.encode("utf-8"))
        creds = [cred(ref, row[0], [svc], row[2], row[3], row[4] if with_note else "")
                 for row, ref, svc in rows]
        write_json(fname.replace(".csv", ".expected.json"),
                   expected(fname, "chrome-csv", creds, []))


# ---------------------------------------------------------------------------------------------
# Firefox
# ---------------------------------------------------------------------------------------------


def gen_firefox():
    rng = rng_for("firefox")
    base = 1709629200000  # 2024-03-05T09:00:00Z in ms
    records = [["url", "username", "password", "httpRealm", "formActionOrigin", "guid", "timeCreated",
                "timeLastUsed", "timePasswordChanged"]]
    creds = []
    for i, ref in enumerate(LOGIN_REFS):
        c = canon(ref)
        for u in c["urls"]:
            if "://" not in u or u.startswith("androidapp://"):
                continue  # Firefox stores web origins only
            origin = origin_of(u)
            if ref == "C10":
                realm, action = "Legacy Intranet", None  # HTTP auth login: realm set, no form action
            elif ref == "C07":
                realm, action = None, ""  # form with no action attribute
            else:
                realm, action = None, origin
            created = base + i * 86_400_000 + rng.randrange(3_600_000)
            used = created + rng.randrange(1, 30) * 86_400_000
            changed = created
            guid = "{" + det_uuid(rng) + "}"
            records.append([origin, c["user"], c["password"], realm, action, guid, created, used, changed])
            creds.append(cred(ref, strip_prefixes(host_of(origin)), [origin], c["user"], c["password"]))
    header = records[0]
    text, _ = csv_text([header] + records[1:], quote_firefox, "\r\n", final_eol=False)
    write_bytes("firefox.csv", text.encode("utf-8"))
    write_json("firefox.expected.json", expected("firefox.csv", "firefox-csv", creds, []))


# ---------------------------------------------------------------------------------------------
# Safari / Apple Passwords
# ---------------------------------------------------------------------------------------------


def gen_safari():
    records = [["Title", "URL", "Username", "Password", "Notes", "OTPAuth"]]
    creds = []
    for ref in LOGIN_REFS:
        c = canon(ref)
        for u in c["urls"]:
            if "://" not in u or u.startswith("androidapp://"):
                continue  # Apple stores web sites; apps are linked, not exported
            host = strip_prefixes(host_of(u))
            title = f"{host} ({c['user']})" if c["user"] else host
            url = origin_of(u) + "/"
            if c["totp"] == TOTP_BARE:
                otp = "otpauth://totp?secret=" + TOTP_BARE + "&algorithm=SHA1&digits=6&period=30"
            elif c["totp"]:
                otp = c["totp"]
            else:
                otp = ""
            records.append([title, url, c["user"], c["password"], c["notes"], otp])
            creds.append(cred(ref, title, [url], c["user"], c["password"], c["notes"], otp or None))
    text, _ = csv_text(records, quote_when_needed('\r\n",'), "\n")
    write_bytes("safari.csv", text.encode("utf-8"))
    write_json("safari.expected.json", expected("safari.csv", "apple-passwords-csv", creds, []))


# ---------------------------------------------------------------------------------------------
# Bitwarden CSV
# ---------------------------------------------------------------------------------------------

BW_FIELDS = {"C08": [("PIN", "4821", 1), ("Security question", "First pet? Rex", 0)]}
BW_FAVORITE = {"C03"}
BW_REPROMPT = {"C09"}


def gen_bitwarden_csv():
    header = ["folder", "favorite", "type", "name", "notes", "fields", "reprompt", "login_uri",
              "login_username", "login_password", "login_totp"]
    records = [header]
    refs = []
    creds = []
    order = LOGIN_REFS[:11] + ["N1"] + LOGIN_REFS[11:]
    for ref in order:
        if ref == "N1":
            n = NOTE_ITEM
            records.append([None, None, "note", n["title"], n["content"], None, "0", None, None, None, None])
            refs.append(ref)
            continue
        c = canon(ref)
        fields = "\n".join(f"{k}: {v}" for k, v, _ in BW_FIELDS.get(ref, [])) or None
        records.append([
            c["folder"], "1" if ref in BW_FAVORITE else None, "login", c["title"], c["notes"] or None, fields,
            "1" if ref in BW_REPROMPT else "0", ",".join(c["urls"]), c["user"] or None, c["password"],
            c["totp"],
        ])
        refs.append(ref)
        creds.append(cred(ref, c["title"], list(c["urls"]), c["user"], c["password"], c["notes"], c["totp"],
                          c["folder"]))
    text, starts = csv_text(records, quote_papaparse, "\r\n", final_eol=False)
    write_bytes("bitwarden.csv", text.encode("utf-8"))
    note_line = starts[1 + refs.index("N1")]
    skipped = [{"line": note_line, "reason": "secure-note", "detail": "type 'note' (Recovery codes)"}]
    write_json("bitwarden.expected.json", expected("bitwarden.csv", "bitwarden-csv", creds, skipped))


# ---------------------------------------------------------------------------------------------
# Bitwarden JSON (unencrypted)
# ---------------------------------------------------------------------------------------------


def bw_date(rng, day):
    ms = rng.randrange(1000)
    sec = rng.randrange(86400)
    return f"2024-{3 + day // 28:02d}-{1 + day % 28:02d}T{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}.{ms:03d}Z"


def gen_bitwarden_json():
    rng = rng_for("bitwarden-json")
    folders = [{"id": det_uuid(rng), "name": "Work"}, {"id": det_uuid(rng), "name": "Work/VPN"}]
    folder_id = {f["name"]: f["id"] for f in folders}
    items = []
    creds = []
    skipped = []
    order = LOGIN_REFS[:11] + ["N1", "N2"] + LOGIN_REFS[11:]
    for day, ref in enumerate(order):
        created = bw_date(rng, day)
        revised = bw_date(rng, day + 20)
        item = {
            "passwordHistory": None,
            "revisionDate": revised,
            "creationDate": created,
            "deletedDate": None,
            "id": det_uuid(rng),
            "organizationId": None,
            "folderId": None,
            "type": 1,
            "reprompt": 0,
            "name": None,
            "notes": None,
            "favorite": False,
        }
        if ref == "N1":
            item.update(type=2, name=NOTE_ITEM["title"], notes=NOTE_ITEM["content"], secureNote={"type": 0})
            skipped.append({"index": len(items), "reason": "secure-note", "detail": "type 2 (Recovery codes)"})
        elif ref == "N2":
            k = CARD_ITEM
            item.update(type=3, name=k["title"], card={
                "cardholderName": k["holder"], "brand": k["brand"], "number": k["number"],
                "expMonth": k["exp_month"], "expYear": k["exp_year"], "code": k["code"]})
            skipped.append({"index": len(items), "reason": "card", "detail": "type 3 (Visa ending 1111)"})
        else:
            c = canon(ref)
            matches = {"C05": [None, 0], "C10": [3]}.get(ref, [None] * len(c["urls"]))
            item.update(
                folderId=folder_id.get(c["folder"]) if c["folder"] else None,
                reprompt=1 if ref in BW_REPROMPT else 0,
                name=c["title"],
                notes=c["notes"] or None,
                favorite=ref in BW_FAVORITE,
            )
            if ref in BW_FIELDS:
                item["fields"] = [{"name": k, "value": v, "type": t, "linkedId": None}
                                  for k, v, t in BW_FIELDS[ref]]
            item["login"] = {
                "fido2Credentials": [],
                "uris": [{"match": m, "uri": u} for m, u in zip(matches, c["urls"])],
                "username": c["user"] or None,
                "password": c["password"],
                "totp": c["totp"],
            }
            if ref == "C01":
                item["passwordHistory"] = [
                    {"lastUsedDate": bw_date(rng, 2), "password": "old-GitHub-pw-1"},
                    {"lastUsedDate": bw_date(rng, 9), "password": "old-GitHub-pw-2"},
                ]
            creds.append(cred(ref, c["title"], list(c["urls"]), c["user"], c["password"], c["notes"], c["totp"],
                              c["folder"]))
        item["collectionIds"] = None
        items.append(item)
    doc = {"encrypted": False, "folders": folders, "items": items}
    # Bitwarden writes JSON.stringify(doc, null, "  "): two-space indent, no final newline.
    write_json("bitwarden.json", doc, trailing_newline=False)
    write_json("bitwarden-json.expected.json",
               expected("bitwarden.json", "bitwarden-json", creds, skipped))


# ---------------------------------------------------------------------------------------------
# 1Password 8 CSV
# ---------------------------------------------------------------------------------------------


def gen_1password():
    records = [["Title", "Url", "Username", "Password", "OTPAuth", "Favorite", "Archived", "Tags", "Notes"]]
    creds = []
    tags = {"C09": "Work/VPN", "C10": "legacy"}
    for ref in LOGIN_REFS:
        c = canon(ref)
        if c["urls"][0].startswith("androidapp://"):
            continue
        url = c["urls"][0]  # the CSV carries the primary website only
        records.append([c["title"], url, c["user"], c["password"], c["totp"] or "",
                        "true" if ref in BW_FAVORITE else "false", "false", tags.get(ref, ""), c["notes"]])
        creds.append(cred(ref, c["title"], [url], c["user"], c["password"], c["notes"], c["totp"], None))
    text, _ = csv_text(records, quote_when_needed('\r\n",'), "\n")
    write_bytes("1password.csv", text.encode("utf-8"))
    write_json("1password.expected.json", expected("1password.csv", "1password8-csv", creds, []))


# ---------------------------------------------------------------------------------------------
# KeePassXC CSV
# ---------------------------------------------------------------------------------------------


def pct(s):
    # QUrl::toPercentEncoding: everything but ALPHA / DIGIT / "-" / "." / "_" / "~" is encoded.
    safe = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    return "".join(ch if ch in safe else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in s)


def keepassxc_totp(title, user, secret):
    return (f"otpauth://totp/{pct(title) if title else 'KeePassXC'}:{pct(user) if user else 'none'}"
            f"?secret={secret}&period=30&digits=6&issuer={pct(title) if title else 'KeePassXC'}")


def gen_keepassxc():
    header = ["Group", "Title", "Username", "Password", "URL", "Notes", "TOTP", "Icon", "Last Modified", "Created"]
    root_entries = []
    sub_entries = []
    for i, ref in enumerate(LOGIN_REFS):
        c = canon(ref)
        secret = None
        if c["totp"] == TOTP_BARE:
            secret = TOTP_BARE
        elif c["totp"]:
            secret = TOTP_URI_SECRET
        totp = keepassxc_totp(c["title"], c["user"], secret) if secret else ""
        created = f"2024-03-{5 + i:02d}T09:{10 + i:02d}:00Z"
        modified = f"2024-04-{1 + i:02d}T18:{20 + i:02d}:30Z"
        group = "Root/" + c["folder"] if c["folder"] else "Root"
        row = [group, c["title"], c["user"], c["password"], c["urls"][0], c["notes"], totp, "0", modified, created]
        (sub_entries if c["folder"] else root_entries).append((row, ref))
    root_entries.append((["Root", NOTE_ITEM["title"], "", "", "", NOTE_ITEM["content"], "", "0",
                          "2024-04-20T07:00:00Z", "2024-04-20T07:00:00Z"], "N1"))
    # Root's own entries first, then each child group depth-first (CsvExporter::exportGroup).
    ordered = root_entries + sub_entries
    text, starts = csv_text([header] + [r for r, _ in ordered], quote_always, "\n")
    write_bytes("keepassxc.csv", text.encode("utf-8"))
    creds = []
    skipped = []
    for (row, ref), line in zip(ordered, starts[1:]):
        if ref == "N1":
            skipped.append({"line": line, "reason": "no-login-data",
                            "detail": "entry has no username, password or URL (Recovery codes)"})
            continue
        folder = row[0].split("/", 1)[1] if "/" in row[0] else None
        creds.append(cred(ref, row[1], [row[4]], row[2], row[3], row[5], row[6] or None, folder))
    write_json("keepassxc.expected.json", expected("keepassxc.csv", "keepassxc-csv", creds, skipped))


# ---------------------------------------------------------------------------------------------
# LastPass CSV
# ---------------------------------------------------------------------------------------------


def gen_lastpass():
    records = [["url", "username", "password", "totp", "extra", "name", "grouping", "fav"]]
    refs = []
    creds = []
    for ref in LOGIN_REFS[:11] + ["N1", "N2"] + LOGIN_REFS[11:]:
        if ref == "N1":
            records.append(["http://sn", "", "", "", NOTE_ITEM["content"], NOTE_ITEM["title"], "Secure Notes", "0"])
            refs.append(ref)
            continue
        if ref == "N2":
            k = CARD_ITEM
            extra = ("NoteType:Credit Card\nLanguage:en-US\nName on Card:" + k["holder"] + "\nType:" + k["brand"]
                     + "\nNumber:" + k["number"] + "\nSecurity Code:" + k["code"]
                     + "\nStart Date:,\nExpiration Date:June," + k["exp_year"] + "\nNotes:")
            records.append(["http://sn", "", "", "", extra, k["title"], "Secure Notes", "0"])
            refs.append(ref)
            continue
        c = canon(ref)
        if c["urls"][0].startswith("androidapp://"):
            continue
        secret = TOTP_BARE if c["totp"] == TOTP_BARE else (TOTP_URI_SECRET if c["totp"] else "")
        grouping = c["folder"].replace("/", "\\") if c["folder"] else ""
        records.append([c["urls"][0], c["user"], c["password"], secret, c["notes"], c["title"], grouping,
                        "1" if ref in BW_FAVORITE else "0"])
        refs.append(ref)
        creds.append(cred(ref, c["title"], [c["urls"][0]], c["user"], c["password"], c["notes"], secret or None,
                          c["folder"]))
    text, starts = csv_text(records, quote_when_needed('\r\n",'), "\n")
    write_bytes("lastpass.csv", text.encode("utf-8"))
    skipped = [
        {"line": starts[1 + refs.index("N1")], "reason": "secure-note", "detail": "url http://sn (Recovery codes)"},
        {"line": starts[1 + refs.index("N2")], "reason": "card",
         "detail": "url http://sn, extra starts NoteType:Credit Card (Visa ending 1111)"},
    ]
    write_json("lastpass.expected.json", expected("lastpass.csv", "lastpass-csv", creds, skipped))


# ---------------------------------------------------------------------------------------------
# FIDO CXF 1.0 JSON
# ---------------------------------------------------------------------------------------------


def gen_cxf():
    rng = rng_for("cxf")

    def new_id(n=16):
        return b64url(bytes(rng.getrandbits(8) for _ in range(n)))

    base = 1709629200  # 2024-03-05T09:00:00Z
    items = []
    creds = []
    skipped = []
    warnings = []
    vpn_item_id = None
    order = LOGIN_REFS[:11] + ["N1", "N2", "P1"] + LOGIN_REFS[11:]
    for i, ref in enumerate(order):
        item = {"id": new_id(), "creationAt": base + i * 86400, "modifiedAt": base + i * 86400 + 3600}
        if ref == "N1":
            item.update(title=NOTE_ITEM["title"], credentials=[
                {"type": "note", "content": {"fieldType": "string", "value": NOTE_ITEM["content"]}}])
            skipped.append({"account": 0, "index": len(items), "reason": "secure-note",
                            "detail": "only a 'note' credential (Recovery codes)"})
        elif ref == "N2":
            k = CARD_ITEM
            item.update(title=k["title"], credentials=[{
                "type": "credit-card",
                "number": {"fieldType": "concealed-string", "value": k["number"]},
                "fullName": {"fieldType": "string", "value": k["holder"]},
                "cardType": {"fieldType": "string", "value": k["brand"]},
                "verificationNumber": {"fieldType": "concealed-string", "value": k["code"]},
                "expiryDate": {"fieldType": "year-month", "value": f"{k['exp_year']}-{int(k['exp_month']):02d}"},
            }])
            skipped.append({"account": 0, "index": len(items), "reason": "card",
                            "detail": "only a 'credit-card' credential (Visa ending 1111)"})
        elif ref == "P1":
            item.update(title="passkeys.example.com", scope={"urls": ["https://passkeys.example.com/"],
                                                             "androidApps": []},
                        credentials=[{
                            "type": "passkey",
                            "credentialId": new_id(32),
                            "rpId": "passkeys.example.com",
                            "username": "alice@example.com",
                            "userDisplayName": "Alice Example",
                            "userHandle": new_id(16),
                            # Random bytes standing in for a PKCS#8 key: not a usable key.
                            "key": new_id(138),
                        }])
            skipped.append({"account": 0, "index": len(items), "reason": "passkey-only",
                            "detail": "only a 'passkey' credential (passkeys.example.com), and it could not be read"})
            # Its key is not a key: reported as a credential that was not imported.
            warnings.append({"account": 0, "index": len(items), "credential": 0, "reason": "credential-not-imported",
                             "detail": "a passkey without a site, ids or an ES256/Ed25519 key Keyhaven can read"})
        else:
            c = canon(ref)
            urls = [u for u in c["urls"] if not u.startswith("androidapp://")]
            apps = [{"bundleId": u.split("://", 1)[1], "name": c["title"]}
                    for u in c["urls"] if u.startswith("androidapp://")]
            basic = {"type": "basic-auth"}
            if c["user"]:
                basic["username"] = {"fieldType": "string", "value": c["user"]}
            basic["password"] = {"fieldType": "concealed-string", "value": c["password"]}
            credentials = [basic]
            if c["totp"]:
                t = {"type": "totp", "secret": TOTP_BARE if c["totp"] == TOTP_BARE else TOTP_URI_SECRET,
                     "period": 30, "digits": 6}
                if c["totp"] != TOTP_BARE:
                    t["username"] = c["user"]
                t["algorithm"] = "sha1"
                if c["totp"] != TOTP_BARE:
                    t["issuer"] = "Example Mail"
                credentials.append(t)
            if c["notes"]:
                credentials.append({"type": "note", "content": {"fieldType": "string", "value": c["notes"]}})
            if ref == "C10":
                credentials.append({"type": "x-example-sign-in-hint",
                                    "hint": {"fieldType": "string", "value": "use the side door on Fridays"},
                                    "futureFlag": True})
                warnings.append({"account": 0, "index": len(items), "credential": len(credentials) - 1,
                                 "reason": "unknown-credential-type",
                                 "detail": "type 'x-example-sign-in-hint' ignored; the item's basic-auth imports"})
            item.update(title=c["title"], scope={"urls": urls, "androidApps": apps}, credentials=credentials)
            if ref in BW_FAVORITE:
                item["favorite"] = True
            if ref == "C09":
                vpn_item_id = item["id"]
            expected_totp = None
            if c["totp"]:
                # CXF totp with sha1/6 digits/30 s: the importer keeps the bare base32 secret
                expected_totp = TOTP_BARE if c["totp"] == TOTP_BARE else TOTP_URI_SECRET
            creds.append(cred(ref, c["title"], list(c["urls"]), c["user"], c["password"], c["notes"],
                              expected_totp, c["folder"]))
        items.append(item)
    collections = [{
        "id": new_id(), "title": "Work", "items": [],
        "subCollections": [{"id": new_id(), "title": "VPN", "items": [{"item": vpn_item_id}]}],
    }]
    doc = {
        "version": {"major": 1, "minor": 0},
        "exporterRpId": "passwords.example.com",
        "exporterDisplayName": "Example Passwords",
        "timestamp": 1735689600,
        "accounts": [{
            "id": new_id(),
            "username": "alice",
            "email": "alice@example.com",
            "fullName": "Alice Example",
            "collections": collections,
            "items": items,
        }],
    }
    write_json("cxf.json", doc)
    write_json("cxf.expected.json", expected("cxf.json", "cxf-1.0-json", creds, skipped, warnings))


# ---------------------------------------------------------------------------------------------
# broken-1000.csv: Chrome shape, 1000 data rows, exactly 5 malformed
# ---------------------------------------------------------------------------------------------

FIRST = ["alex", "maria", "jonas", "li", "fatima", "noah", "emma", "lukas", "sofia", "mateo", "yuki", "amir",
         "chloe", "oskar", "ines", "david", "hana", "ravi", "zoe", "tomás", "jürgen", "anaïs", "björn", "chen"]
LAST = ["smith", "garcia", "müller", "nguyen", "kowalski", "rossi", "tanaka", "silva", "dubois", "novak",
        "jensen", "okafor", "haddad", "ivanova", "larsen", "moreau"]
MAILS = ["example.com", "example.net", "mail.example.org", "post.example.de"]
STEMS = ["acme", "bluebird", "cobalt", "daybreak", "ember", "fjord", "granite", "harbor", "ivory", "juniper",
         "kestrel", "lumen", "meadow", "nimbus", "orchid", "pioneer", "quartz", "riverside", "summit", "tundra",
         "umbra", "vertex", "willow", "xenon", "yonder", "zephyr"]
KINDS = ["shop", "bank", "mail", "cloud", "news", "travel", "games", "health", "learn", "energy"]
TLDS = ["example.com", "example.net", "example.org", "example.co.uk", "example.de", "example.io"]
PATHS = ["/login", "/signin", "/account/login", "/", "/auth", "/users/sign_in"]
PW_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!#$%&*+-=?@^_,;\"'"
BROKEN_LINES = {137: "too-many-fields", 402: "too-few-fields", 588: "missing-url-and-password",
                771: "bare-quote", 950: "invalid-utf8"}


def gen_broken():
    rng = rng_for("broken-1000")
    seen_pw = set()
    valid = []
    while len(valid) < 995:
        stem, kind = rng.choice(STEMS), rng.choice(KINDS)
        host = rng.choice(["", "www.", "accounts.", "login.", "my."]) + f"{stem}-{kind}.{rng.choice(TLDS)}"
        scheme = "http://" if rng.random() < 0.05 else "https://"
        url = scheme + host + rng.choice(PATHS)
        name = strip_prefixes(host, ("m.", "mobile.", "www."))
        r = rng.random()
        first, last = rng.choice(FIRST), rng.choice(LAST)
        if r < 0.03:
            user = ""
        elif r < 0.6:
            user = f"{first}.{last}{rng.randrange(100) if rng.random() < 0.4 else ''}@{rng.choice(MAILS)}"
        else:
            user = f"{first}_{last}{rng.randrange(1000)}"
        while True:
            pw = "".join(rng.choice(PW_CHARS) for _ in range(rng.randrange(12, 25)))
            if pw not in seen_pw and not pw.startswith(" "):
                seen_pw.add(pw)
                break
        r = rng.random()
        if r < 0.08:
            note = f"Account #{rng.randrange(10**6):06d}, PIN hint \"{rng.choice(STEMS)}\""
        elif r < 0.12:
            note = f"Kundennummer {rng.randrange(10**5)} – Grüße aus Zürich"
        else:
            note = ""
        valid.append([name, url, user, pw, note])
    valid.sort()
    q = quote_when_needed('\r\n",')
    lines = [b"name,url,username,password,note"]
    expected_creds = []
    skipped = []
    vi = 0
    for line_no in range(2, 1002):
        kind = BROKEN_LINES.get(line_no)
        if kind is None:
            row = valid[vi]
            vi += 1
            lines.append(",".join(q(v) for v in row).encode("utf-8"))
            expected_creds.append(cred(None, row[0], [row[1]], row[2], row[3], row[4]))
            continue
        if kind == "too-many-fields":
            raw = "nimbus-travel.example.com,https://nimbus-travel.example.com/login,li.nguyen@example.com,Tr4v3l!9qWz,Seat 12A, window"
            detail = "6 fields, header has 5 (unquoted comma in the note)"
        elif kind == "too-few-fields":
            raw = "ember-bank.example.de,https://ember-bank.example.de/login,emma_rossi417"
            detail = "3 fields, header has 5"
        elif kind == "missing-url-and-password":
            raw = "orphan entry,,zoe.larsen@example.net,,left over after a failed sync"
            detail = "url and password are both empty"
        elif kind == "bare-quote":
            raw = 'quartz-games.example.io,https://quartz-games.example.io/signin,ravi "the rock" haddad,Qz7#games!pW2,'
            detail = "double quote inside an unquoted field (RFC 4180 forbids it)"
        lines_bytes = None
        if kind == "invalid-utf8":
            lines_bytes = (b"cobalt-health.example.net,https://cobalt-health.example.net/login,"
                           b"j\xc3\x28rgen.m\xfcller@example.net,H3alth*Cb9x!,")
            detail = "bytes C3 28 and a lone FC: not UTF-8 (Latin-1 residue)"
        lines.append(lines_bytes if lines_bytes is not None else raw.encode("utf-8"))
        skipped.append({"line": line_no, "reason": kind, "detail": detail})
    assert vi == 995
    data = b"\n".join(lines) + b"\n"
    write_bytes("broken-1000.csv", data)
    doc = expected("broken-1000.csv", "chrome-csv", expected_creds, skipped)
    assert doc["duplicatesMerged"] == 0 and len(doc["credentials"]) == 995
    doc["importedCount"] = 995
    for c in doc["credentials"]:
        del c["ref"]
    write_json("broken-1000.expected.json", doc)


# ---------------------------------------------------------------------------------------------
# canonical.json: the logical content every sample was written from
# ---------------------------------------------------------------------------------------------


def gen_canonical():
    logins = []
    for c in CANON:
        if "dup_of" in c:
            logins.append({"ref": c["ref"], "duplicateOf": c["dup_of"], "covers": c["covers"]})
            continue
        logins.append({"ref": c["ref"], "title": c["title"], "services": c["urls"], "user": c["user"],
                       "password": c["password"], "notes": c["notes"], "totp": c["totp"], "folder": c["folder"],
                       "covers": c["covers"]})
    doc = {
        "logins": logins,
        "nonLogins": [
            {"ref": "N1", "kind": "secure-note", "title": NOTE_ITEM["title"], "content": NOTE_ITEM["content"]},
            {"ref": "N2", "kind": "card", "title": CARD_ITEM["title"], "number": CARD_ITEM["number"]},
            {"ref": "P1", "kind": "passkey", "title": "passkeys.example.com", "note": "CXF only"},
        ],
    }
    write_json("canonical.json", doc)


if __name__ == "__main__":
    gen_canonical()
    gen_chrome()
    gen_firefox()
    gen_safari()
    gen_bitwarden_csv()
    gen_bitwarden_json()
    gen_1password()
    gen_keepassxc()
    gen_lastpass()
    gen_cxf()
    gen_broken()
