#!/usr/bin/env python3
"""AutoFill's two moments a person waits for, measured in headless Chromium (issue 14; issue 26's
in-page frame): the person's press on a field → Keyhaven's menu rendered, and the person's choice →
the form filled. Times are wall-clock milliseconds (performance.timeOrigin + performance.now()) in
the page (its pointerdown, the password field's `input` event) and in Keyhaven's frame (when it
rendered the menu, when the person chose; read through DevTools, as the page cannot read the frame).
Everything real: a real pointer click, `keyhaven agent`, `keyhaven browser-host`, the extension, a
paired session (the first round, which starts the host and the session, is reported apart).

    Benchmarks/scripts/autofill_chromium_benchmark.py [ROUNDS]     (default 30)
Needs a built keyhaven ($KEYHAVEN_BINARY, default .build/debug/keyhaven — a release build measures
the agent's part faster), chromium, chromium-driver and selenium (scripts/install-test-deps.sh).
"""
import json
import time
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "Tests/browser"))
import autofill_browser as A  # noqa: E402

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
h = A.Harness()
try:
    h.pair()
    focus_to_menu, choose_to_fill = [], []

    def frame_times(after):
        for target in h.ui._targets():
            value = h.ui.evaluate(target, "JSON.stringify({rendered: Number(document.body.dataset.rendered || 0),"
                                          " chosen: Number(document.body.dataset.chosen || 0)})")
            times = json.loads(value) if value else {}
            if times.get("rendered", 0) > after:
                return times
        return None

    for index in range(rounds + 1):
        h.driver.get(h.site + "/login.html")
        h.driver.execute_script("""
            const now = () => performance.timeOrigin + performance.now();
            window.__t = {};
            document.addEventListener('pointerdown', () => { if (!window.__t.press) window.__t.press = now(); }, true);
            document.getElementById('password').addEventListener('input', () => {
              if (!window.__t.filled) window.__t.filled = now();
            });""")
        A.wait_for(lambda: h.driver.execute_script("return !!document.querySelector('keyhaven-ui')"), what="the frame")
        time.sleep(0.3)  # the frame loads ahead of the press, as it does while a person reads the page
        h.driver.find_element("id", "user").click()
        press = A.wait_for(lambda: h.driver.execute_script("return window.__t.press || null"), what="the press")
        rendered = A.wait_for(lambda: frame_times(press), what="the menu")["rendered"]
        option = A.wait_for(lambda: next((o for o in h.menu_options() if o.text.startswith("ada")), None), what="ada")
        option.click()
        filled = A.wait_for(lambda: h.driver.execute_script("return window.__t.filled || null"), what="fill")
        chosen = A.wait_for(lambda: frame_times(press), what="the choice")["chosen"]
        if index == 0:
            print(f"first round (starts the host and the session): press → menu {rendered - press:.1f} ms, "
                  f"choose → filled {filled - chosen:.1f} ms")
            continue
        focus_to_menu.append(rendered - press)
        choose_to_fill.append(filled - chosen)

    def summary(values):
        ordered = sorted(values)
        return (f"p50 {statistics.median(ordered):.1f} ms, p90 {ordered[int(len(ordered) * 0.9) - 1]:.1f} ms, "
                f"max {ordered[-1]:.1f} ms")

    print(f"{rounds} rounds, a page load each:")
    print(f"  press → menu shown:  {summary(focus_to_menu)}")
    print(f"  choose → form filled: {summary(choose_to_fill)}")
finally:
    h.close()
