#!/usr/bin/env python3
"""The web app (`keyhaven ui`) in a real browser, end to end.

    Tests/browser/webapp_browser.py SCENARIO [SCENARIO…]     (or `all`)

Each scenario gets a fresh vault, shiny (the example service, as a process of its own, with alice's
password-only account and bob's authenticator-protected one), an agent started by `keyhaven ui` with
$BROWSER set to a recorder (it keeps the argv and environment the browser would get: the path of a
private launch file, and no launch secret anywhere), and a fresh headless Chromium profile (Debian
`chromium` + `chromium-driver`, PyPI `selenium`) that opens that file as the person's browser would.
The binaries are $KEYHAVEN_BINARY and $SHINY_BINARY (default .build/debug/…).

Screenshots of every page, light and dark, go to $KEYHAVEN_SCREENSHOTS (default
.build/screenshots/webapp). Exit status 0 when every scenario passed; WebAppBrowserTests (Swift)
runs one scenario per test.
"""
import base64
import hashlib
import hmac
import http.client
import http.server
import json
import os
import pathlib
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from browser_common import (KEYHAVEN, MASTER, ROOT, Pages, chromium, free_port, keyhaven_environment,  # noqa: E402
                            run_keyhaven, run_scenarios, wait_for)

SHINY = os.environ.get("SHINY_BINARY") or str(pathlib.Path(KEYHAVEN).parent / "shiny")
SHOTS = pathlib.Path(os.environ.get("KEYHAVEN_SCREENSHOTS") or ROOT / ".build/screenshots/webapp")
ALICE = "Password1234"
BOB = "Welcome12345"
VERA = ALICE  # reused: vera shows up in the recommendations
TOTP_SECRET = "JBSWY3DPEHPK3PXP"


def totp(secret, at=None):
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    counter = int((at or time.time()) // 30)
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    value = struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF
    return f"{value % 1_000_000:06d}"


def serve_html(body):
    """Serves one page (an attacker's site) on http://localhost:PORT/; `server.seen` keeps each
    request's path and Cookie header."""
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers.get("Cookie")))
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = Pages(("127.0.0.1", free_port()), Handler)
    server.seen = seen
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://localhost:{server.server_address[1]}"


class Harness:
    def __init__(self, extension=False, chromium=True):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="keyhaven-webapp-"))
        self.env = keyhaven_environment(self.dir)
        self.servers = []
        self.driver = None
        self.shiny, self.shiny_origin = self.start_shiny()
        self.bob_secret = self.shiny_signup("bob", BOB, totp=True)
        self.shiny_signup("alice", ALICE)

        self.keyhaven("init", "--scrypt-log-n", "10", "--insecure-kdf", password=True)
        self.keyhaven("add", self.shiny_origin, "--user", "alice", "--password", ALICE, password=True)
        self.keyhaven("add", self.shiny_origin, "--user", "bob", "--password", BOB, "--totp", self.bob_secret,
                      password=True)
        self.keyhaven("add", "https://mail.example.invalid", "--user", "ada", "--password", ALICE, "--totp",
                      TOTP_SECRET, password=True)
        self.keyhaven("add", "https://bank.example.invalid", "--user", "ada", "--password", "first-Secret-9",
                      password=True)
        self.keyhaven("edit", "bank.example.invalid", "--password", "k7#Qv!p2Lx9@wZr4Tm", password=True)
        self.keyhaven("add", "https://forum.example.invalid", "--user", "ada", "--password", "letmein",
                      password=True)
        # An offline breach index in which "letmein" appears.
        lines = self.dir / "pwned.txt"
        lines.write_text(f"{hashlib.sha1(b'letmein').hexdigest().upper()}:4213\n")
        self.index = self.dir / "pwned.khbi"
        self.keyhaven("breach", "index", "build", str(lines), "--output", str(self.index))

        self.launch_page, self.url = self.launch()
        self.origin = self.url.split("/launch")[0]
        self.port = int(self.origin.rsplit(":", 1)[1])
        self.base = None  # /s/CAPABILITY, the session's paths: known once the browser is in
        if chromium:
            self.start_browser(extension)

    def launch(self):
        """`keyhaven ui` as the person runs it, with $BROWSER a recorder of the argv and environment
        the browser gets: one argument, the file:// URL of a private (0600, in the 0700 runtime
        folder) page that leads to the launch URL, and the launch secret nowhere in either."""
        record = self.dir / "browser-record.json"
        recorder = self.dir / "browser-recorder.py"
        recorder.write_text("#!/usr/bin/env python3\nimport json, os, sys\n"
                            f"open({str(record)!r} + '.tmp', 'w').write(json.dumps({{'argv': sys.argv[1:], "
                            "'env': dict(os.environ)}))\n"
                            f"os.replace({str(record)!r} + '.tmp', {str(record)!r})\n")
        recorder.chmod(0o700)
        launched = run_keyhaven(dict(self.env, BROWSER=str(recorder)), "ui")
        url = launched.stdout.splitlines()[0]
        assert url.startswith("http://127.0.0.1:") and "/launch?secret=" in url, launched.stdout
        recorded = json.loads(wait_for(lambda: record.exists() and record.read_text(), what="the browser's argv"))
        secret = url.split("secret=", 1)[1]
        assert len(recorded["argv"]) == 1 and recorded["argv"][0].startswith("file:///"), recorded["argv"]
        assert secret not in json.dumps(recorded) and "secret=" not in json.dumps(recorded), "a secret in argv/env"
        page = pathlib.Path(urllib.parse.unquote(urllib.parse.urlparse(recorded["argv"][0]).path))
        assert page.parent == self.dir / "run/keyhaven", page
        assert stat.S_IMODE(page.stat().st_mode) == 0o600, oct(page.stat().st_mode)
        assert stat.S_IMODE(page.parent.stat().st_mode) == 0o700, oct(page.parent.stat().st_mode)
        assert url in page.read_text()
        self.launch_file = page
        return recorded["argv"][0], url

    def landed(self):
        """After the launch: the browser is in the session (its unlock page), `base` is the
        session's path, and the launch file is gone."""
        wait_for(lambda: self.driver.current_url.endswith("/unlock"), what="the unlock page")
        path = urllib.parse.urlparse(self.driver.current_url).path
        assert path.startswith("/s/") and path.endswith("/unlock"), path
        self.base = path[:-len("/unlock")]
        wait_for(lambda: not self.launch_file.exists(), what="the launch file removed once used")

    # --- processes ---

    def start_shiny(self, public_host=None):
        """shiny as a process of its own; with `public_host` (`localhost`: a host that can be a
        passkey's RP ID) its public origin names that host, so its manifest offers passkeys."""
        port = free_port()
        arguments = [SHINY, "--port", str(port), "--demo", "--stop-when-stdin-closes"]
        if public_host:
            arguments += ["--public-url", f"http://{public_host}:{port}"]
        process = subprocess.Popen(arguments, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
        line = process.stdout.readline()
        assert "listening on" in line, line
        self.servers_to_stop = getattr(self, "servers_to_stop", []) + [process]
        return process, (f"http://{public_host}:{port}" if public_host else line.strip().split()[-1])

    def keyhaven(self, *args, password=False, check=True, stdin=None):
        return run_keyhaven(self.env, *args, password=password, check=check, stdin=stdin)

    def shiny_post(self, path, body):
        request = urllib.request.Request(self.shiny_origin + path, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def shiny_signup(self, user, password, totp=False):
        status, body = self.shiny_post("/api/signup", {"user": user, "password": password, "totp": totp})
        assert status in (200, 201), (status, body)
        return body.get("totpSecret")

    def shiny_signs_in(self, user, password, code=None):
        body = {"user": user, "password": password}
        if code:
            body["code"] = code
        status, _ = self.shiny_post("/api/signin", body)
        return status == 200

    def agent_state(self):
        status = self.keyhaven("agent", "status", "--json", check=False)
        return json.loads(status.stdout).get("state")

    def vault_password(self, service, user):
        listed = json.loads(self.keyhaven("list", "--json", password=True).stdout)
        found = next(c for c in listed if c["user"] == user and c["services"][0].startswith(service))
        shown = self.keyhaven("show", found["id"], "--json", "--reveal", password=True)
        return json.loads(shown.stdout)["password"]

    def start_browser(self, extension):
        self.profile = self.dir / "profile"
        self.downloads = self.dir / "downloads"
        self.downloads.mkdir()
        self.extension = None
        if extension:
            self.extension = self.dir / "extension"
            self.keyhaven("browser", "install", "--browser", "chromium", "--user-data-dir", str(self.profile))
            written = self.keyhaven("browser", "extension", "--output", str(self.extension))
            self.extension_id = written.stderr.strip().split()[-1]
        self.driver = chromium(self.env, self.profile, self.extension, size="1280,1000")
        self.driver.execute_cdp_cmd("Browser.setDownloadBehavior",
                                    {"behavior": "allow", "downloadPath": str(self.downloads)})

    def close(self):
        if self.driver:
            self.driver.quit()
        self.keyhaven("agent", "stop", check=False)
        for shiny in getattr(self, "servers_to_stop", []):
            try:
                shiny.stdin.close()
                shiny.wait(10)
            except Exception:
                shiny.kill()
        for server in self.servers:
            server.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- the browser ---

    def find(self, element_id):
        from selenium.webdriver.common.by import By
        return wait_for(lambda: self.driver.find_element(By.ID, element_id), what=f"#{element_id}")

    def text(self, element_id):
        return self.find(element_id).text

    def exists(self, element_id):
        from selenium.webdriver.common.by import By
        return bool(self.driver.find_elements(By.ID, element_id))

    def go(self, path):
        self.driver.get(self.origin + self.base + path)

    def launch_and_unlock(self, settle=True):
        self.driver.get(self.launch_page)
        self.landed()
        self.find("master-password").send_keys(MASTER)
        self.find("unlock").click()
        wait_for(lambda: self.exists("count-credentials"), timeout=30, what="the overview")
        # The breach index and the services: as `keyhaven audit --breach-index` would see them.
        self.save_settings(breach="index", index=str(self.index))
        if settle:
            self.settled()

    def settled(self):
        """Waits until the audit has asked every site (it does so in the background: pages never
        wait for the network), so a page shows what each site said."""
        def done():
            body = json.loads(self.api("/api/audit/updates")["text"])
            return body["ready"] and not body["lookingUp"]
        wait_for(done, timeout=30, what="the audit's lookups")

    def save_settings(self, breach=None, index=None, idle=None):
        self.go("/settings")
        if breach:
            self.find(f"breach-source-{breach}").click()
        if index is not None:
            field = self.find("breach-index-path")
            field.clear()
            field.send_keys(index)
        if idle is not None:
            field = self.find("idle-lock")
            field.clear()
            field.send_keys(str(idle))
        self.find("save-settings").click()
        wait_for(lambda: "Saved" in self.text("flash"), what="Saved")

    def shot(self, name):
        """The page as it is, in light and dark."""
        SHOTS.mkdir(parents=True, exist_ok=True)
        for scheme in ("light", "dark"):
            self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                        {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
            height = self.driver.execute_script("return Math.min(document.documentElement.scrollHeight, 3000)")
            self.driver.set_window_size(1280, max(700, height + 20))
            self.driver.save_screenshot(str(SHOTS / f"{name}-{scheme}.png"))
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        self.driver.set_window_size(1280, 1000)

    def api(self, path, method="GET", body=None, headers=None):
        """Fetches from the page's own context (cookie, CSRF token)."""
        return self.driver.execute_async_script(
            "const [path, method, body, headers, done] = arguments;"
            "const csrf = document.querySelector('meta[name=csrf-token]').content;"
            "const base = document.querySelector('meta[name=keyhaven-base]').content;"
            "fetch(base + path, {method, body, headers: {'X-CSRF-Token': csrf, ...headers}})"
            ".then(async r => done({status: r.status, text: await r.text()}))"
            ".catch(e => done({status: 0, text: String(e)}));",
            path, method, body, headers or {})

    def raw(self, method, path, headers=None, body=None):
        """A request outside the browser (an attacker's or a curious program's)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        data = response.read().decode(errors="replace")
        return response.status, dict(response.getheaders()), data

    def cookie(self):
        return next(c for c in self.driver.get_cookies() if c["name"].startswith("keyhaven_session"))


# --- scenarios ---

def unlock(h):
    vault = pathlib.Path(h.env["KEYHAVEN_VAULT"])
    before = hashlib.sha256(vault.read_bytes()).hexdigest()
    h.driver.get(h.launch_page)
    h.landed()
    label = h.driver.find_element("css selector", "label[for=master-password]").text
    assert label == "Master password", label
    h.shot("unlock")
    h.find("master-password").send_keys("wrong horse battery")
    h.find("unlock").click()
    assert "wrong" in h.text("error").lower(), h.text("error")
    h.shot("unlock-wrong")
    assert h.agent_state() == "locked"
    assert hashlib.sha256(vault.read_bytes()).hexdigest() == before, "a wrong password changed the vault"
    cookie = h.cookie()
    assert cookie["httpOnly"] and cookie.get("sameSite") == "Strict", cookie
    assert "secret=" not in h.driver.current_url
    h.find("master-password").send_keys(MASTER)
    h.find("unlock").click()
    wait_for(lambda: h.exists("count-credentials"), timeout=30, what="the overview")
    assert h.agent_state() == "unlocked"
    h.save_settings(breach="index", index=str(h.index))
    h.go("/")
    assert h.text("count-credentials") == "5", h.text("count-credentials")
    assert h.exists("chart-issues") and h.exists("chart-strength")
    h.shot("overview")


def search(h):
    h.launch_and_unlock()
    h.go("/vault")
    assert "5 passwords" in h.text("result-count"), h.text("result-count")
    h.shot("vault")
    h.find("search").send_keys("forum")
    wait_for(lambda: len(h.find("vault-list").find_elements("css selector", "li")) == 1, what="one result")
    row = h.find("vault-list").find_element("css selector", "li")
    assert "forum.example.invalid" in row.text and "Breached" in row.text, row.text
    assert "q=forum" in h.driver.current_url
    # Without script, the same search from the server.
    h.go("/vault?q=shiny-does-not-exist")
    assert "0 of 5" in h.text("result-count"), h.text("result-count")
    h.go("/vault?q=ada")
    assert len(h.find("vault-list").find_elements("css selector", "li")) == 3


def item(h):
    h.launch_and_unlock()
    listed = json.loads(h.keyhaven("list", "--json", password=True).stdout)
    bank = next(c for c in listed if "bank" in c["services"][0])
    h.go(f"/items/{bank['id']}")
    assert h.text("password") == "••••••••••••"
    h.find("reveal").click()
    wait_for(lambda: h.text("password") == "k7#Qv!p2Lx9@wZr4Tm", what="the revealed password")
    rows = h.find("history").find_elements("css selector", "tbody tr")
    assert len(rows) == 1, len(rows)
    assert time.strftime("%Y-%m-%d") in rows[0].text, rows[0].text
    rows[0].find_element("css selector", "button").click()
    wait_for(lambda: h.text("history-0") == "first-Secret-9", what="the history entry")
    assert "bank.example.invalid" in h.text("websites")
    h.shot("item")
    mail = next(c for c in listed if "mail" in c["services"][0])
    h.go(f"/items/{mail['id']}")
    code = wait_for(lambda: h.text("otp") if h.text("otp").isdigit() else None, what="the one-time code")
    assert code in (totp(TOTP_SECRET), totp(TOTP_SECRET, time.time() - 30)), code
    assert "Reused" in h.text("issues") and "Weak" in h.text("issues"), h.text("issues")


def recommendations(h):
    h.launch_and_unlock()
    h.go("/recommendations")
    h.shot("recommendations")
    page = json.loads(h.api("/api/audit")["text"])
    cli = json.loads(h.keyhaven("audit", "--json", "--breach-index", str(h.index), password=True).stdout)

    def essence(report):
        items = {i["id"]: (i["severity"], i["issues"], i.get("breachCount"), i.get("strengthScore"),
                           i["actions"].get("changePasswordURL"), json.dumps(i["actions"].get("upgrade"), sort_keys=True))
                 for i in report["items"]}
        return items, report["summary"]

    assert essence(page) == essence(cli), (essence(page), essence(cli))
    high = h.find("group-high")
    assert "forum.example.invalid" in high.text and "data breach" in high.text, high.text
    flagged = [i for i in cli["items"] if i["severity"] != "none"]
    shown = h.driver.find_elements("css selector", "li.recommendation")
    assert len(shown) == len(flagged), (len(shown), len(flagged))
    # Upgrade is offered where the service publishes its manifest (shiny), not elsewhere.
    alice = next(i for i in cli["items"] if i["user"] == "alice")
    assert h.exists(f"upgrade-{alice['id']}")
    forum = next(i for i in cli["items"] if "forum" in i["service"])
    assert not h.exists(f"upgrade-{forum['id']}")
    # Ignore hides it (and it stays hidden); Show again restores it.
    h.find(f"ignore-{forum['id']}").click()
    wait_for(lambda: "Ignored" in h.text("flash"), what="the ignore notice")
    assert forum["id"] not in h.find("group-high").text if h.exists("group-high") else True
    assert h.exists("ignored")
    h.go("/recommendations")
    assert len(h.driver.find_elements("css selector", "li.recommendation")) == len(flagged) - 1
    h.driver.find_element("css selector", "#ignored summary").click()
    h.driver.find_element("css selector", "#ignored button").click()
    wait_for(lambda: len(h.driver.find_elements("css selector", "li.recommendation")) == len(flagged),
             what="the recommendation back")


def progressive(h):
    """Issue 27: the recommendations show at once, and take each site's answer as it comes. A site
    that answers its change-password request only after 3 s (a stand-in on loopback) gets its
    "Change on website" link on the open page, added by the page's script — no reload — and the
    status line says when every site was asked."""
    class Slow(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/.well-known/change-password":
                time.sleep(3)
                self.send_response(302)
                self.send_header("Location", "/account/password")
                body = b""
            elif self.path == "/account/password":
                self.send_response(200)
                body = b"change your password here"
            else:
                self.send_response(404)
                body = b""
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = Pages(("127.0.0.1", free_port()), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    h.servers.append(server)
    site = f"http://127.0.0.1:{server.server_address[1]}"
    h.keyhaven("add", site + "/login", "--user", "ada", "--password", "letmein", password=True)
    listed = json.loads(h.keyhaven("list", "--json", password=True).stdout)
    slow = next(c for c in listed if c["services"][0].startswith(site))
    h.launch_and_unlock(settle=False)
    h.go("/recommendations")
    from selenium.webdriver.common.by import By
    # The page made from the offline findings (a page made earlier reloads itself once they are ready).
    wait_for(lambda: h.find("audit-status").get_attribute("data-audit-wait") == "", what="the offline findings")
    row = h.driver.find_element(By.CSS_SELECTOR, f'li.recommendation[data-id="{slow["id"]}"]')
    assert "letmein" not in row.text and "easy to guess" in row.text, row.text
    assert not row.find_elements(By.CSS_SELECTOR, '[data-action="change"]'), "the slow site answered already"
    h.driver.execute_script("document.body.dataset.kept = 'yes'")
    link = wait_for(lambda: row.find_element(By.CSS_SELECTOR, '[data-action="change"]'), timeout=20,
                    what="the slow site's change-password link")
    assert link.get_attribute("href") == site + "/account/password", link.get_attribute("href")
    assert row.get_attribute("data-updated") == "1"
    assert h.driver.execute_script("return document.body.dataset.kept") == "yes", "the page was reloaded"
    wait_for(lambda: h.find("audit-status").get_attribute("data-done") == "1", timeout=20, what="every site asked")
    # mail, bank and forum (.invalid) cannot be reached; the status says so.
    assert "could not be reached" in h.text("audit-status"), h.text("audit-status")
    h.shot("recommendations-progressive")


def upgrade(h):
    h.launch_and_unlock()
    listed = json.loads(h.keyhaven("list", "--json", password=True).stdout)
    alice = next(c for c in listed if c["user"] == "alice")
    h.go("/recommendations")
    h.find(f"upgrade-{alice['id']}").click()
    wait_for(lambda: h.exists("result"), timeout=60, what="the upgrade's result")
    assert h.find("result").get_attribute("data-outcome") == "upgraded", h.text("result")
    h.shot("upgrade-done")
    new = h.vault_password(h.shiny_origin, "alice")
    assert new != ALICE
    assert h.shiny_signs_in("alice", new) and not h.shiny_signs_in("alice", ALICE)
    h.find("back").click()
    rows = h.find("history").find_elements("css selector", "tbody tr")
    assert len(rows) == 1


def upgrade_to_passkey(h):
    """Security Recommendations offer the upgrade to a passkey first where the service's manifest
    offers it (a shiny whose public origin is http://localhost:PORT); afterwards the vault holds the
    passkey, the account's page lists it, and shiny no longer takes the password."""
    _, origin = h.start_shiny(public_host="localhost")
    h.shiny_origin, shiny_127 = origin, h.shiny_origin
    h.shiny_signup("vera", VERA)
    h.keyhaven("add", origin, "--user", "vera", "--password", VERA, password=True)
    h.launch_and_unlock()
    listed = json.loads(h.keyhaven("list", "--json", password=True).stdout)
    vera = next(c for c in listed if c["user"] == "vera")
    h.go("/recommendations")
    alice = next(c for c in listed if c["user"] == "alice")
    assert h.exists(f"upgrade-{alice['id']}") and not h.exists(f"passkey-{alice['id']}")  # 127.0.0.1: no passkeys
    h.find(f"passkey-{vera['id']}").click()
    wait_for(lambda: h.exists("result"), timeout=60, what="the passkey upgrade's result")
    assert h.find("result").get_attribute("data-outcome") == "upgraded", h.text("result")
    assert "passkey" in h.text("result")
    passkeys = json.loads(h.keyhaven("passkey", "list", "--json", password=True).stdout)
    assert [(p["rpId"], p["userName"]) for p in passkeys] == [("localhost", "vera")], passkeys
    assert not h.shiny_signs_in("vera", VERA)
    h.shiny_origin = shiny_127
    h.find("back").click()
    assert "signs in with its passkey" in h.text("password")
    assert "localhost" in h.find("passkeys").text


def step_up(h):
    h.launch_and_unlock()
    listed = json.loads(h.keyhaven("list", "--json", password=True).stdout)
    bob = next(c for c in listed if c["user"] == "bob")
    h.go(f"/items/{bob['id']}")
    h.find("upgrade").click()
    link = h.find("service-page")
    h.shot("upgrade-step-up")
    app = h.driver.current_window_handle
    link.click()
    wait_for(lambda: len(h.driver.window_handles) == 2, what="shiny's page in a new tab")
    h.driver.switch_to.window(next(w for w in h.driver.window_handles if w != app))
    h.find("code").send_keys(totp(h.bob_secret))
    h.shot("shiny-step-up")
    h.find("verify").click()
    wait_for(lambda: "changed" in h.text("result").lower(), what="shiny's confirmation")
    h.driver.close()
    h.driver.switch_to.window(app)
    wait_for(lambda: h.exists("result"), timeout=60, what="the upgrade's result")
    assert h.find("result").get_attribute("data-outcome") == "upgraded", h.text("result")
    new = h.vault_password(h.shiny_origin, "bob")
    assert new != BOB
    time.sleep(1)
    assert h.shiny_signs_in("bob", new, totp(h.bob_secret, time.time() + 30))


def cancel(h):
    h.launch_and_unlock()
    listed = json.loads(h.keyhaven("list", "--json", password=True).stdout)
    bob = next(c for c in listed if c["user"] == "bob")
    h.go(f"/items/{bob['id']}")
    h.find("upgrade").click()
    h.find("service-page")
    h.find("cancel").click()
    wait_for(lambda: h.exists("result"), timeout=60, what="the cancelled upgrade's result")
    assert h.find("result").get_attribute("data-outcome") == "failed", h.text("result")
    assert "Cancelled" in h.text("result"), h.text("result")
    h.shot("upgrade-cancelled")
    assert h.vault_password(h.shiny_origin, "bob") == BOB
    assert h.shiny_signs_in("bob", BOB, totp(h.bob_secret))


def generator(h):
    h.launch_and_unlock()
    h.go("/generator")
    h.find("rules").send_keys("required: digit; allowed: digit; minlength: 12; maxlength: 12;")
    h.find("generate").click()
    wait_for(lambda: "yours" in h.text("rules-source"), what="the page generated with the rules")
    password = h.text("generated")
    assert len(password) == 12 and password.isdigit(), (password, h.driver.current_url)
    h.find("rules").clear()
    length = h.find("length")
    length.clear()
    length.send_keys("32")
    h.find("generate").click()
    password = wait_for(lambda: h.text("generated") if len(h.text("generated")) == 32 else None,
                        what=f"a password of 32 characters ({h.driver.current_url})")
    assert h.find("generated-strength").get_attribute("data-score") == "4"
    h.find("check-password").send_keys("password1")
    wait_for(lambda: h.find("check-strength").get_attribute("data-score") == "0", what="score 0 for password1")
    assert h.text("check-feedback"), "no zxcvbn feedback"
    h.shot("generator")
    # Rules looked up by site: Apple's quirk for 163.com (minlength: 6; maxlength: 16;).
    h.go("/generator?domain=163.com")
    assert "163.com" in h.text("rules-source"), h.text("rules-source")
    assert 6 <= len(h.text("generated")) <= 16, h.text("generated")
    h.go("/generator?rules=minlength:%2040;%20maxlength:%208;")
    assert "cannot be met" in h.text("generator-error"), h.text("generator-error")


def import_preview(h):
    h.launch_and_unlock()
    export = h.dir / "chrome.csv"
    export.write_text("name,url,username,password\n"
                      "New one,https://new.example.invalid,zoe,Fresh-Password-77\n"
                      "Another,https://another.example.invalid,yan,Other-Password-88\n"
                      # Already in the vault (added without a title).
                      ",https://bank.example.invalid,ada,k7#Qv!p2Lx9@wZr4Tm\n")
    h.go("/import")
    h.shot("import")
    h.find("import-file").send_keys(str(export))
    h.find("preview-import").click()
    assert h.text("preview-new") == "2", h.text("preview-new")
    assert h.text("preview-duplicates") == "1", h.text("preview-duplicates")
    h.shot("import-preview")
    assert len(json.loads(h.keyhaven("list", "--json", password=True).stdout)) == 5, "the preview wrote"
    h.find("confirm-import").click()
    wait_for(lambda: "Imported 2" in h.text("flash"), what="the import notice")
    assert len(json.loads(h.keyhaven("list", "--json", password=True).stdout)) == 7
    assert "7 passwords" in h.text("result-count"), h.text("result-count")
    # A file that is not an export is refused, and nothing is written.
    bad = h.dir / "notes.txt"
    bad.write_text("just some notes\n")
    h.go("/import")
    h.find("import-file").send_keys(str(bad))
    h.find("preview-import").click()
    assert "Nothing was imported" in h.text("import-error"), h.text("import-error")


def export(h):
    h.launch_and_unlock()
    h.go("/import")
    h.find("export-understood").click()
    h.find("export").click()
    path = h.downloads / "keyhaven-export.csv"
    wait_for(lambda: path.exists() and path.stat().st_size > 0, what="the downloaded export")
    text = path.read_text()
    assert "forum.example.invalid" in text and "letmein" in text, text[:200]
    assert text.count("\n") >= 6


def pairing(h):
    h.launch_and_unlock()
    h.go("/pairing")
    assert h.exists("pairing-waiting") and h.exists("no-pairings")
    app = h.driver.current_window_handle
    h.driver.switch_to.new_window("tab")
    h.driver.get(f"chrome-extension://{h.extension_id}/popup.html")
    wait_for(lambda: h.driver.find_element("id", "status").text not in ("", "…"), what="the popup's state")
    h.driver.find_element("id", "pair").click()
    h.driver.switch_to.window(app)
    code = wait_for(lambda: h.text("pairing-code") if h.exists("pairing-code") else None, what="the pairing code")
    assert len(code) == 6 and code.isdigit(), code
    h.shot("pairing")
    h.driver.switch_to.window(next(w for w in h.driver.window_handles if w != app))
    h.driver.find_element("id", "code").send_keys(code)
    h.driver.find_element("id", "confirm").click()
    wait_for(lambda: "Paired" in h.driver.find_element("id", "status").text, what="Paired in the popup")
    h.driver.switch_to.window(app)
    h.go("/pairing")
    rows = h.find("pairings").find_elements("css selector", "tbody tr")
    assert len(rows) == 1, len(rows)
    h.shot("pairing-paired")
    rows[0].find_element("css selector", "button").click()
    wait_for(lambda: h.exists("no-pairings"), what="the revoked pairing gone")
    assert json.loads(h.keyhaven("browser", "pairings", "--json").stdout) == []


def settings(h):
    h.launch_and_unlock()
    h.save_settings(idle=5)
    h.shot("settings")
    status = json.loads(h.keyhaven("agent", "status", "--json").stdout)
    assert status["idleLockSeconds"] == 300, status
    h.go("/settings")
    field = h.find("breach-index-path")
    h.find("breach-source-index").click()
    field.clear()
    field.send_keys("/no/such/index")
    h.find("save-settings").click()
    assert "no breach index" in h.text("settings-error").lower()


def lock(h):
    h.launch_and_unlock()
    h.find("lock").click()
    wait_for(lambda: h.driver.current_url.endswith("/unlock"), what="the unlock page")
    assert h.agent_state() == "locked"
    h.go("/vault")
    assert h.driver.current_url.endswith("/unlock")
    # Locking from the CLI locks the app too.
    h.find("master-password").send_keys(MASTER)
    h.find("unlock").click()
    wait_for(lambda: h.exists("count-credentials"), timeout=30, what="the overview")
    h.keyhaven("lock")
    h.go("/vault")
    assert h.driver.current_url.endswith("/unlock")


def attacks(h):
    h.launch_and_unlock()
    cookie = h.cookie()
    jar = f"{cookie['name']}={cookie['value']}"
    host = {"Host": f"127.0.0.1:{h.port}"}
    # The cookie is scoped to the session's paths: HttpOnly, Strict, and no `Path=/`.
    assert cookie["httpOnly"] and cookie.get("sameSite") == "Strict" and cookie["path"] == h.base + "/", cookie
    # No access without the launch secret: no cookie, a used secret, a made-up one.
    status, _, body = h.raw("GET", "/vault", host)
    assert status == 401 and "keyhaven ui" in body, (status, body[:200])
    status, _, body = h.raw("GET", h.base + "/vault", host)
    assert status == 401 and "keyhaven ui" in body, (status, body[:200])
    path = h.url.split(h.origin)[1]
    status, headers, _ = h.raw("GET", path, host)
    assert status == 401 and "Set-Cookie" not in headers, (status, headers)
    status, _, _ = h.raw("GET", "/launch?secret=AAAA", host)
    assert status == 401
    # Cookies ignore ports (security review #5): another server on 127.0.0.1 that the browser
    # visits gets no session cookie (its Path is the session's), and the cookie itself, replayed
    # by another client with any Host, opens no page and no API, secrets included.
    server, site = serve_html("<p>another server on 127.0.0.1</p>")
    h.servers.append(server)
    other = f"http://127.0.0.1:{server.server_address[1]}"
    h.driver.get(other + "/")
    h.driver.get(other + "/vault")
    assert server.seen and not any(c and "keyhaven_session" in c for _, c in server.seen), server.seen
    listed = json.loads(h.keyhaven("list", "--json", password=True).stdout)
    bank = next(c for c in listed if "bank" in c["services"][0])
    secret_paths = ["/", "/vault", f"/items/{bank['id']}", "/settings", "/api/audit", "/api/items",
                    f"/api/items/{bank['id']}/password", "/api/status"]
    for replay_host in (f"127.0.0.1:{h.port}", f"localhost:{h.port}", f"127.0.0.1:{server.server_address[1]}",
                        f"attacker.example:{h.port}"):
        for prefix in ("", "/s/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"):
            for secret_path in secret_paths:
                status, _, body = h.raw("GET", prefix + secret_path,
                                        {"Host": replay_host, "Cookie": jar, "X-CSRF-Token": "x"})
                assert status in (401, 403), (replay_host, prefix + secret_path, status)
                assert "k7#Qv!p2Lx9@wZr4Tm" not in body and "bank.example" not in body and "alice" not in body, body
    # A forged Host (DNS rebinding), even with the cookie and the capability.
    status, _, body = h.raw("GET", h.base + "/api/audit", {"Host": f"attacker.example:{h.port}", "Cookie": jar})
    assert status == 403, status
    status, _, body = h.raw("GET", h.base + "/api/audit", {"Host": f"localhost:{h.port}", "Cookie": jar})
    assert status == 403, status
    # The honest use still works: cookie and capability together.
    status, _, body = h.raw("GET", h.base + "/api/items", dict(host, Cookie=jar))
    assert status == 200 and "bank.example" in body, status
    # A cross-site POST: from another site's page in the same browser (SameSite=Strict, Origin, CSRF),
    # even one that knows the session's paths…
    server, site = serve_html(f"""<form id=f method=post action="{h.origin}{h.base}/lock"><input name=csrf value=x></form>
        <script>document.getElementById('f').submit()</script>""")
    h.servers.append(server)
    h.driver.get(site)
    time.sleep(1.5)
    assert h.agent_state() == "unlocked", "a cross-site form locked the agent"
    # …and directly with the cookie, the capability and the right CSRF token but a foreign Origin.
    h.go("/settings")
    csrf = h.find("settings").find_element("name", "csrf").get_attribute("value") if h.exists("settings") else \
        h.driver.find_element("name", "csrf").get_attribute("value")
    form = urllib.parse.urlencode({"csrf": csrf})
    status, _, _ = h.raw("POST", h.base + "/lock", dict(host, Cookie=jar, Origin=site,
                                                        **{"Content-Type": "application/x-www-form-urlencoded"}), form)
    assert status == 403 and h.agent_state() == "unlocked", status
    status, _, _ = h.raw("POST", h.base + "/lock", dict(host, Cookie=jar, Origin=h.origin,
                                                        **{"Content-Type": "application/x-www-form-urlencoded"}),
                         "csrf=wrong")
    assert status == 403 and h.agent_state() == "unlocked", status
    # Framing: another site's iframe gets nothing.
    server, site = serve_html(f'<iframe id=frame src="{h.origin}{h.base}/vault" width=800 height=600></iframe>')
    h.servers.append(server)
    h.driver.get(site)
    time.sleep(1.5)
    h.driver.switch_to.frame(h.driver.find_element("id", "frame"))
    assert not h.driver.find_elements("id", "nav-vault"), "the app rendered inside another site's frame"
    h.driver.switch_to.default_content()
    status, headers, _ = h.raw("GET", h.base + "/", dict(host, Cookie=jar))
    csp = headers.get("Content-Security-Policy", "")
    assert "frame-ancestors 'none'" in csp and "'unsafe-inline'" not in csp and headers.get("X-Frame-Options") == "DENY"
    # Nothing secret in what the app printed or logged.
    log = (h.dir / "run/keyhaven/agent.log")
    if log.exists():
        assert MASTER not in log.read_text() and ALICE not in log.read_text()


def accessibility(h):
    """axe-core (PyPI axe-selenium-python bundles it) on every page, light and dark: WCAG 2 A and AA
    rules — contrast, labels, landmarks, names of buttons and links."""
    import axe_selenium_python
    source = (pathlib.Path(axe_selenium_python.__file__).parent / "node_modules/axe-core/axe.min.js").read_text()
    h.launch_and_unlock()
    listed = json.loads(h.keyhaven("list", "--json", password=True).stdout)
    mail = next(c for c in listed if "mail" in c["services"][0])
    paths = ["/", "/vault", f"/items/{mail['id']}", "/recommendations", "/generator?length=24", "/import",
             "/pairing", "/settings"]
    problems = []

    def check(scheme, where):
        h.driver.execute_script(source)
        found = h.driver.execute_async_script(
            "const done = arguments[0];"
            "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})"
            ".then(r => done(r.violations.map(v => [v.id, v.nodes.slice(0, 3).map(n => n.target.join(' '))])))"
            ".catch(e => done([['axe failed', String(e)]]));")
        problems.extend((scheme, where, violation) for violation in found)

    for scheme in ("light", "dark"):
        h.driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                 {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
        for path in paths:
            h.go(path)
            check(scheme, path)
        h.find("lock").click()
        wait_for(lambda: h.driver.current_url.endswith("/unlock"), what="the unlock page")
        check(scheme, "/unlock")
        h.find("master-password").send_keys(MASTER)
        h.find("unlock").click()
        wait_for(lambda: h.exists("count-credentials"), timeout=30, what="the overview")
    assert not problems, "\n".join(map(str, problems))


def firefox(h):
    """The launch in Firefox ESR (Mozilla's Marionette client, no geckodriver): the launch file
    leads to the session's unlock page, the session works, the file goes, and another server on
    127.0.0.1 that Firefox visits gets no session cookie."""
    import socket
    from marionette_driver.by import By
    from marionette_driver.marionette import Marionette

    profile = h.dir / "firefox-profile"
    profile.mkdir()
    port = free_port()
    (profile / "user.js").write_text(f'user_pref("marionette.port", {port});\n'
                                     'user_pref("browser.shell.checkDefaultBrowser", false);\n'
                                     'user_pref("datareporting.policy.dataSubmissionEnabled", false);\n')
    process = subprocess.Popen(["firefox-esr", "--headless", "--marionette", "--no-remote", "--profile", str(profile)],
                               env=h.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = None
    try:
        def listening():
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_for(listening, timeout=30, what="Marionette's port")
        client = Marionette(host="127.0.0.1", port=port)
        client.start_session()
        client.navigate(h.launch_page)
        wait_for(lambda: client.get_url().endswith("/unlock"), what="the unlock page in Firefox")
        path = urllib.parse.urlparse(client.get_url()).path
        assert path.startswith("/s/"), path
        base = path[:-len("/unlock")]
        wait_for(lambda: not h.launch_file.exists(), what="the launch file removed once used")
        wait_for(lambda: client.find_element(By.ID, "master-password"), what="the master password field").send_keys(MASTER)
        client.find_element(By.ID, "unlock").click()
        wait_for(lambda: client.find_elements(By.ID, "count-credentials"), timeout=30, what="the overview in Firefox")
        client.navigate(h.origin + base + "/vault?q=bank")
        wait_for(lambda: "bank.example.invalid" in client.find_element(By.ID, "vault-list").text,
                 what="the vault list in Firefox")
        server, _ = serve_html("<p>another server on 127.0.0.1</p>")
        h.servers.append(server)
        client.navigate(f"http://127.0.0.1:{server.server_address[1]}/")
        assert server.seen and not any(c and "keyhaven_session" in c for _, c in server.seen), server.seen
    finally:
        if client:
            client.delete_session()
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


SCENARIOS = {f.__name__: f for f in [unlock, search, item, recommendations, progressive, upgrade, upgrade_to_passkey, step_up, cancel, generator,
                                     import_preview, export, pairing, settings, lock, attacks, accessibility, firefox]}


def main(names):
    return run_scenarios(names, SCENARIOS,
                         lambda name: Harness(extension=(name == "pairing"), chromium=(name != "firefox")),
                         lambda name: SHOTS / f"failed-{name}.png")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
