"""What the browser suites share (autofill_browser.py, webapp_browser.py): free ports, waiting, a
threaded page server, the environment of a throwaway Keyhaven, running the binary, and headless
Chromium's options."""
import http.server
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
