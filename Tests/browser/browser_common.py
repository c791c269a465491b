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
            if shown["rows"] and (best is None or shown["rendered"] > best["rendered"]):
                best = shown
        return best

    def text(self):
        shown = self.view()
        return "\n".join(r["text"] + ("\n" + r["detail"] if r["detail"] else "") for r in shown["rows"]) if shown else ""

    def rows(self):
        shown = self.view()
        if not shown:
            return []
        return [FrameRow(self, shown, row) for row in shown["rows"] if row["action"]]


class FrameRow:
    """An actionable row of Keyhaven's frame; `click()` is a real pointer click at its place, after
    the frame's guards."""

    def __init__(self, frame, shown, row):
        self.frame, self.shown, self.row = frame, shown, row
        self.text = row["text"] + ("\n" + row["detail"] if row["detail"] else "")

    # The frame ignores clicks for 400 ms after it renders, and the page's content script for 350 ms
    # after it places the frame: a new view is rendered, then resized by a message that arrives
    # later (longer on a loaded machine). A person's click comes after both; so does this one.
    SETTLE_S = 0.9

    def click(self):
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
