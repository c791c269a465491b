#!/usr/bin/env python3
"""AutoFill's two moments a person waits for, measured in headless Chromium (issue 14):
focus → Keyhaven's menu shown, and choose → the form filled. The page records both with
performance.now(): the focus, the moment a `keyhaven-menu` element is attached (a MutationObserver),
the click on the option and the password field's `input` event. Everything real: `keyhaven agent`,
`keyhaven browser-host`, the extension, a paired session (the first round, which starts the host
and the session, is reported apart).

    Benchmarks/scripts/autofill_chromium_benchmark.py [ROUNDS]     (default 30)
Needs a built keyhaven ($KEYHAVEN_BINARY, default .build/debug/keyhaven — a release build measures
the agent's part faster), chromium, chromium-driver and selenium (scripts/install-test-deps.sh).
"""
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
    for index in range(rounds + 1):
        h.driver.get(h.site + "/login.html")
        h.driver.execute_script("""
            window.__t = {};
            new MutationObserver(() => {
              if (!window.__t.menu && document.querySelector('keyhaven-menu')) window.__t.menu = performance.now();
            }).observe(document.documentElement, {childList: true});
            document.getElementById('password').addEventListener('input', () => {
              if (!window.__t.filled) window.__t.filled = performance.now();
            });
            window.__t.focus = performance.now();
            document.getElementById('user').focus();""")
        option = A.wait_for(lambda: next((o for o in h.menu_options() if o.text.startswith("ada")), None), what="menu")
        h.driver.execute_script("window.__t.choose = performance.now(); arguments[0].click();", option)
        times = A.wait_for(lambda: h.driver.execute_script("return window.__t.filled ? window.__t : null"), what="fill")
        if index == 0:
            print(f"first round (starts the host and the session): focus → menu {times['menu'] - times['focus']:.1f} ms, "
                  f"choose → filled {times['filled'] - times['choose']:.1f} ms")
            continue
        focus_to_menu.append(times["menu"] - times["focus"])
        choose_to_fill.append(times["filled"] - times["choose"])

    def summary(values):
        ordered = sorted(values)
        return (f"p50 {statistics.median(ordered):.1f} ms, p90 {ordered[int(len(ordered) * 0.9) - 1]:.1f} ms, "
                f"max {ordered[-1]:.1f} ms")

    print(f"{rounds} rounds, a page load each:")
    print(f"  focus → menu shown:   {summary(focus_to_menu)}")
    print(f"  choose → form filled: {summary(choose_to_fill)}")
finally:
    h.close()
