"""What the browser suites share (autofill_browser.py, webapp_browser.py): free ports, waiting, a
threaded page server, the environment of a throwaway Keyhaven, running the binary, and headless
Chromium's options."""
import http.server
import json
import os
import pathlib
import socket
import socketserver
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
KEYHAVEN = os.environ.get("KEYHAVEN_BINARY") or str(ROOT / ".build/debug/keyhaven")
MASTER = "correct horse battery"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Pages(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def wait_for(condition, timeout=15, what="condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = condition()
            if last:
                return last
        except Exception as error:  # a stale element while the page changes
            last = error
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def click_until(click, done, what, attempts=3, timeout=5):
    """A person's click, made again while it did nothing: a click that lands while Keyhaven's UI is
    being shown (again: a late resize, the field's own focus handling) falls inside its guard and is
    ignored, as it should be; a person then clicks again. `click` finds what it clicks afresh."""
    for attempt in range(attempts):
        click()
        try:
            return wait_for(done, timeout=timeout, what=what)
        except AssertionError:
            if attempt == attempts - 1:
                raise


def keyhaven_environment(directory):
    """A Keyhaven of its own under `directory`: vault, runtime folder (the agent's socket), home."""
    (directory / "home").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("KEYHAVEN_PASSWORD", "KEYHAVEN_AGENT_SOCKET", "DISPLAY", "BROWSER", "WAYLAND_DISPLAY")}
    env.update({
        "KEYHAVEN_VAULT": str(directory / "vault.sqlite"),
        "KEYHAVEN_INSECURE_KDF": "1",
        "XDG_RUNTIME_DIR": str(directory / "run"),
        "HOME": str(directory / "home"),
        "XDG_CONFIG_HOME": str(directory / "home/.config"),
    })
    return env


def run_keyhaven(env, *args, password=False, check=True, stdin=None, timeout=90):
    env = dict(env)
    if password:
        env["KEYHAVEN_PASSWORD"] = MASTER
    result = subprocess.run([KEYHAVEN, *args], env=env, capture_output=True, text=True, input=stdin, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"keyhaven {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result


def chromium(env, profile, extension=None, size="1200,900"):
    """Headless Chromium with a fresh profile (and Keyhaven's unpacked extension)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/lib/chromium/chromium"
    flags = ["--headless=new", "--no-sandbox", f"--user-data-dir={profile}", f"--window-size={size}"]
    if extension:
        flags += [f"--load-extension={extension}", f"--disable-extensions-except={extension}"]
    for flag in flags:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver", env=env), options=options)
    driver.set_script_timeout(15)
    return driver


def run_scenarios(names, scenarios, make_harness, shot_path):
    """Runs each named scenario (all for `all` or none) on a fresh harness from
    `make_harness(name)` (None for a scenario that builds its own); prints `ok NAME` or `FAIL NAME: …` with a screenshot at `shot_path(name)`. Exit status 0
    when every one passed."""
    if names == ["all"] or not names:
        names = list(scenarios)
    failed = []
    for name in names:
        started = time.time()
        harness = None
        try:
            harness = make_harness(name)
            scenarios[name](harness)
            print(f"ok {name} ({time.time() - started:.1f} s)")
        except Exception as error:
            failed.append(name)
            print(f"FAIL {name}: {type(error).__name__}: {error}")
            if getattr(harness, "driver", None):
                shot = pathlib.Path(shot_path(name))
                try:
                    shot.parent.mkdir(parents=True, exist_ok=True)
                    harness.driver.save_screenshot(str(shot))
                    print(f"  screenshot: {shot}")
                except Exception:
                    pass
        finally:
            if harness:
                harness.close()
    return 1 if failed else 0


class KeyhavenFrame:
    """Keyhaven's in-page UI as a test sees it in Chromium. The page cannot read it (an
    extension-origin frame in a closed shadow root), so the test reads it the way a person sees it:
    through DevTools, on the frame's own target; and clicks it the way a person does, with a real
    pointer event at the row's place (WebDriver actions). `rows()` is the shown view's rows, newest
    view first across every Keyhaven frame of the browser."""

    def __init__(self, driver):
        self.driver = driver
        self.address = driver.capabilities["goog:chromeOptions"]["debuggerAddress"]

    def _targets(self):
        import urllib.request
        with urllib.request.urlopen(f"http://{self.address}/json/list", timeout=5) as answer:
            targets = json.load(answer)
        return [t for t in targets if t.get("type") == "iframe" and "/ui.html#" in t.get("url", "")]

    @staticmethod
    def evaluate(target, expression):
        import websocket
        socket_ = websocket.create_connection(target["webSocketDebuggerUrl"], suppress_origin=True, timeout=5)
        try:
            socket_.send(json.dumps({"id": 1, "method": "Runtime.evaluate",
                                     "params": {"expression": expression, "returnByValue": True}}))
            while True:
                reply = json.loads(socket_.recv())
                if reply.get("id") == 1:
                    return reply.get("result", {}).get("result", {}).get("value")
        finally:
            socket_.close()

    VIEW = """JSON.stringify({
      rendered: Number(document.body.dataset.rendered || 0),
      kind: document.getElementById('view').dataset.kind || '',
      rows: [...document.getElementById('view').children].map((e) => ({
        text: (e.querySelector('.text') || e).textContent, detail: e.querySelector('small') ? e.querySelector('small').textContent : '',
        action: e.tagName === 'BUTTON', top: e.getBoundingClientRect().top, height: e.getBoundingClientRect().height,
        width: e.getBoundingClientRect().width }))})"""

    def view(self):
        """The most recently rendered view that has rows: {rendered, kind, rows}, or None."""
        best = None
        for target in self._targets():
            try:
                value = self.evaluate(target, self.VIEW)
            except Exception:
                continue
            if not value:
                continue
            shown = json.loads(value)
            shown["target"] = target["id"]
            if shown["rows"] and (best is None or shown["rendered"] > best["rendered"]):
                best = shown
        return best

    def chosen(self, target_id):
        """When the frame on target `target_id` last accepted a choice (ui.js sets
        `body.dataset.chosen`; 0 for never), or None once that frame is gone."""
        target = next((t for t in self._targets() if t["id"] == target_id), None)
        if target is None:
            return None
        try:
            return self.evaluate(target, "Number(document.body.dataset.chosen || 0)") or 0
        except Exception:
            return None

    def text(self):
        shown = self.view()
        return "\n".join(r["text"] + ("\n" + r["detail"] if r["detail"] else "") for r in shown["rows"]) if shown else ""

    def rows(self):
        shown = self.view()
        if not shown:
            return []
        return [FrameRow(self, shown, row) for row in shown["rows"] if row["action"]]


class FrameRow:
    """An actionable row of Keyhaven's frame; `click()` is a person's click at its place, after the
    frame's guards, made again while the frame ignored it; `click_once()` is one click, whatever
    the frame makes of it (the hostile pages' tests, where ignoring it is the point)."""

    def __init__(self, frame, shown, row):
        self.frame, self.shown, self.row = frame, shown, row
        self.text = row["text"] + ("\n" + row["detail"] if row["detail"] else "")

    # The frame ignores clicks for 400 ms after it renders, and the page's content script for 350 ms
    # after it places the frame: a new view is rendered, then resized by a message that arrives
    # later (longer on a loaded machine). A person's click comes after both; so does this one.
    SETTLE_S = 0.9

    def click(self, attempts=3):
        """A click the frame accepted (its `chosen` stamp moved on, or the frame went away with the
        choice). A click that lands while the view is being shown again — a late resize, the
        field's own focus handling, a loaded machine — falls inside the frame's guard and is
        ignored, as it should be; a person clicks again, and so does this, on the row read afresh."""
        row = self
        for _ in range(attempts):
            target = row.shown.get("target")
            before = row.frame.chosen(target) if target else None
            row.click_once()
            if target is None or before is None:
                return
            deadline = time.time() + 2.5
            while time.time() < deadline:
                now = row.frame.chosen(target)
                if now is None or now > before:
                    return
                time.sleep(0.1)
            fresh = None
            deadline = time.time() + 3
            while fresh is None and time.time() < deadline:
                fresh = next((r for r in row.frame.rows() if r.text == self.text), None)
                time.sleep(0.1)
            if fresh is None:
                return  # the view moved on: the caller's own wait says whether the choice happened
            row = fresh
        # Ignored every time: the caller's own wait fails, naming what it waited for.

    def click_once(self):
        from selenium.webdriver.common.action_chains import ActionChains
        driver = self.frame.driver
        wait = self.SETTLE_S - (time.time() * 1000 - self.shown["rendered"]) / 1000
        if wait > 0:
            time.sleep(wait)
        host = wait_for(lambda: next((h for h in driver.find_elements("css selector", "keyhaven-ui")
                                      if driver.execute_script("return arguments[0].matches(':popover-open')", h)), None),
                        what="Keyhaven's frame in the page")
        height = host.size["height"]
        y = self.row["top"] + self.row["height"] / 2 - height / 2
        ActionChains(driver).move_to_element_with_offset(host, 0, int(y)).click().perform()
