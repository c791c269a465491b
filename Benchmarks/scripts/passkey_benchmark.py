#!/usr/bin/env python3
"""Passkeys in headless Chromium (issue 16): a sign-in with a passkey, page → agent → page, through
Chromium's webAuthenticationProxy, the extension, `keyhaven browser-host` and the agent — against
Chromium's own (virtual) authenticator measured in the same run, and OpenSSL's ECDSA P-256 signing
rate (PyPI `cryptography`) as the peer of the agent's signatures per second
(`swift package benchmark --filter "Passkey.*"` in Benchmarks/).

Times are wall-clock milliseconds (performance.timeOrigin + performance.now()) in the page and in
Keyhaven's frame (read through DevTools: the page cannot read that frame): the get() call, the
moment the frame rendered the sheet, the person's click in it (a real pointer click), and the
promise's resolution. Keyhaven's time is (sheet − call) + (resolved − click): the person's thinking
time in between, and the sheet's 400 ms click guard, are not Keyhaven's. The virtual authenticator
consents at once, so its time is resolved − call.

    Benchmarks/scripts/passkey_benchmark.py [ROUNDS]     (default 30)
Needs a built keyhaven ($KEYHAVEN_BINARY, default .build/debug/keyhaven), chromium, chromium-driver,
selenium and cryptography (scripts/install-test-deps.sh).
"""
import base64
import json
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "Tests/browser"))
import autofill_browser as A  # noqa: E402

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def summary(values):
    ordered = sorted(values)
    return (f"p50 {statistics.median(ordered):.1f} ms, p90 {ordered[max(0, int(len(ordered) * 0.9) - 1)]:.1f} ms, "
            f"max {ordered[-1]:.1f} ms")


def openssl_signatures_per_second(seconds=2.0):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    data = os.urandom(37 + 32)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        key.sign(data, ec.ECDSA(hashes.SHA256()))
        count += 1
    return count / (time.perf_counter() - start)


INSTRUMENT = """
    const now = () => performance.timeOrigin + performance.now();
    window.__t = {};
    window.__t.call = now();
    window.run('get', arguments[0]);
    const started = window.__t;
    const poll = setInterval(() => { if (window.outcome) { started.done = now(); clearInterval(poll); } }, 0);
"""


def frame_times(h):
    """When Keyhaven's frame rendered its view and when the person chose in it (epoch ms)."""
    for target in h.ui._targets():
        value = h.ui.evaluate(target, "JSON.stringify({rendered: Number(document.body.dataset.rendered || 0),"
                                      " chosen: Number(document.body.dataset.chosen || 0)})")
        times = json.loads(value) if value else {}
        if times.get("chosen"):
            return times
    return None

h = A.Harness()
try:
    h.pair()
    page = h.other + "/passkey.html"
    h.driver.get(page)
    A.run_in_page(h, "create", {"userId": "bench", "user": "ada", "displayName": "Ada", "challenge": b64(os.urandom(32))})
    A.press(h, "Save passkey in Keyhaven")
    assert "ok" in A.page_outcome(h, "create()")

    keyhaven, showing, answering = [], [], []
    for index in range(rounds + 1):
        h.driver.get(page)
        # Keyhaven's frame loads with the page (it has a field Keyhaven fills); a person's click on
        # "Sign in with a passkey" comes later than that.
        A.wait_for(lambda: h.driver.execute_script("return !!document.querySelector('keyhaven-ui')"), what="the frame")
        time.sleep(0.3)
        h.driver.execute_script(INSTRUMENT, {"challenge": b64(os.urandom(32))})
        A.sheet(h)
        next(b for b in A.sheet_buttons(h) if b.text.split("\n")[0] == "ada").click()
        t = A.wait_for(lambda: h.driver.execute_script("return window.__t.done ? window.__t : null"), what="get()")
        assert "ok" in h.driver.execute_script("return window.outcome"), "the sign-in failed"
        frame = A.wait_for(lambda: frame_times(h), what="the frame's times")
        elapsed = (frame["rendered"] - t["call"]) + (t["done"] - frame["chosen"])
        if index == 0:
            print(f"first round: {elapsed:.1f} ms")
            continue
        keyhaven.append(elapsed)
        showing.append(frame["rendered"] - t["call"])
        answering.append(t["done"] - frame["chosen"])

    # The peer: Chromium's own authenticator (Keyhaven locked, so its proxy is detached).
    from selenium.webdriver.common.virtual_authenticator import VirtualAuthenticatorOptions
    h.keyhaven("lock")
    time.sleep(0.5)
    options = VirtualAuthenticatorOptions()
    options.protocol = VirtualAuthenticatorOptions.Protocol.CTAP2
    options.transport = VirtualAuthenticatorOptions.Transport.INTERNAL
    options.has_resident_key = options.has_user_verification = options.is_user_verified = True
    h.driver.add_virtual_authenticator(options)
    h.driver.get(page)
    A.run_in_page(h, "create", {"userId": "bench", "user": "ada", "displayName": "Ada", "challenge": b64(os.urandom(32))})
    assert "ok" in A.page_outcome(h, "create() with the virtual authenticator")
    chromium = []
    for index in range(rounds + 1):
        h.driver.get(page)
        h.driver.execute_script(INSTRUMENT, {"challenge": b64(os.urandom(32))})
        t = A.wait_for(lambda: h.driver.execute_script("return window.__t.done ? window.__t : null"), what="get()")
        assert "ok" in h.driver.execute_script("return window.outcome"), "the virtual sign-in failed"
        if index:
            chromium.append(t["done"] - t["call"])

    print(f"{rounds} passkey sign-ins, a page load each:")
    print(f"  Keyhaven (page → agent → page, the person's choice excluded): {summary(keyhaven)}")
    print(f"    of which call → sheet rendered: {summary(showing)}; choice → answer: {summary(answering)}")
    print(f"  Chromium's virtual authenticator (no UI):                     {summary(chromium)}")
    print(f"  ratio of p50s: {statistics.median(keyhaven) / statistics.median(chromium):.2f}× Chromium's own")
    print(f"OpenSSL ECDSA P-256 signatures per second (PyPI cryptography, one core): "
          f"{openssl_signatures_per_second():,.0f}")
finally:
    h.close()
