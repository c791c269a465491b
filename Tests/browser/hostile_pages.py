#!/usr/bin/env python3
"""Hostile pages against Keyhaven's in-page UI, in a real browser with the real extension and agent
(issue 26; the attacks of the 2026-11-27 security review). Each scenario runs an attack that must
fail, then the honest use it must not break.

    Tests/browser/hostile_pages.py SCENARIO [SCENARIO…]     (or `all`)

The page's script (pages/hostile.js) only does what any page can: focus, synthetic events,
DOM reads, a MutationObserver, window.find, the selection, script-submitted forms, its own top-layer
elements and styles. The person's actions are real input (WebDriver actions). Chromium scenarios use
autofill_browser's Harness; `firefox_*` ones drive Firefox ESR through Marionette.
"""
import base64
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import autofill_browser as A  # noqa: E402
from browser_common import click_until, run_scenarios, wait_for  # noqa: E402

SECRETS = ["victim", "Bank-Secret-123", "bank.example", "Mail-Secret-456", "mail.example.org", "ada-Secret-1",
           "elsewhere", "bob-Secret-9"]
b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def assert_no_secrets(what, data):
    text = json.dumps(data)
    leaked = [secret for secret in SECRETS if secret in text]
    assert not leaked, f"{what} leaked {leaked}: {text[:600]}"


def page_loot(h):
    return h.driver.execute_script("return JSON.parse(JSON.stringify(window.loot))")


def shown_in_page(h):
    return h.driver.execute_script("return window.shownByKeyhaven()")


def victim_vault(h):
    h.keyhaven("add", "https://bank.example", "--user", "victim", "--password", "Bank-Secret-123", password=True)
    h.keyhaven("add", "https://mail.example.org", "--user", "victim@mail", "--password", "Mail-Secret-456", password=True)


def chooser_tab(h):
    """The chooser the extension opened ("Other passwords…"), as a window handle the test drives."""
    url = wait_for(lambda: next((t["url"] for t in h.driver.execute_cdp_cmd("Target.getTargets", {})["targetInfos"]
                                 if "/chooser.html#" in t["url"]), None), what="the chooser page")
    page = h.driver.current_window_handle
    for handle in h.driver.window_handles:
        h.driver.switch_to.window(handle)
        if h.driver.current_url == url:
            return page, handle
    # chromedriver does not list a tab an extension opened: the same page (its token is in the URL)
    # in a tab of the test's own.
    h.driver.switch_to.new_window("tab")
    h.driver.get(url)
    return page, h.driver.current_window_handle


# --- scenarios ---

def steal_the_vault(h):
    """Review #1: a page focuses a field by script, reads and clicks Keyhaven's menu with synthetic
    events, and asks for "Other passwords…". Nothing shows, nothing is readable, nothing fills; with
    the person, the menu works and another site's password fills only after the chooser page."""
    victim_vault(h)
    h.keyhaven("add", "https://elsewhere.example", "--user", "bob", "--password", "bob-Secret-9", password=True)
    h.pair()
    # A site the vault has no password for (the harness's ada is saved for h.site).
    h.driver.get(h.other + "/hostile-login.html")
    time.sleep(0.8)  # the preloaded frame is in place
    read = h.driver.execute_async_script("window.attackField('user').then(arguments[arguments.length - 1])")
    assert not shown_in_page(h), "a menu showed for a field the page focused by script"
    assert h.ui.view() is None, f"Keyhaven showed {h.ui.text()!r} without the person"
    assert all(e["shadowRoot"] is None for e in read["elements"]) and read["frames"] == 0, read
    assert_no_secrets("the page's reads", page_loot(h))
    assert h.value("user") == "" and h.value("password") == ""

    # The person clicks the field: the menu shows, and the page still reads and clicks nothing.
    h.driver.find_element("id", "user").click()
    rows = wait_for(lambda: h.menu_options(), what="the menu after the person's click")
    assert [r.text for r in rows] == ["Other passwords…"], [r.text for r in rows]
    assert shown_in_page(h)
    h.driver.execute_script("window.readKeyhaven(); window.clickKeyhaven();")
    time.sleep(1.0)
    assert_no_secrets("the page's reads of the open menu", page_loot(h))
    assert h.value("password") == "" and not any("chooser.html" in t["url"] for t in
                                                 h.driver.execute_cdp_cmd("Target.getTargets", {})["targetInfos"])

    # The person asks for other passwords: the list is a page of Keyhaven's own.
    next(r for r in h.menu_options() if r.text == "Other passwords…").click()
    page, chooser = chooser_tab(h)
    h.driver.switch_to.window(chooser)
    wait_for(lambda: h.driver.execute_script("return document.body.dataset.state") == "ready", what="the chooser")
    listed = [b.text for b in h.driver.find_elements("css selector", "#list button")]
    assert any(t.startswith("bob") for t in listed) and any(t.startswith("victim") for t in listed), listed
    h.driver.switch_to.window(page)
    h.driver.execute_script("window.readKeyhaven(); window.clickKeyhaven();")
    time.sleep(0.5)
    assert_no_secrets("the page while the chooser is open", page_loot(h))
    assert h.value("password") == ""
    h.driver.switch_to.window(chooser)
    next(b for b in h.driver.find_elements("css selector", "#list button") if b.text.startswith("bob")).click()
    question = h.driver.find_element("id", "question").text
    assert "elsewhere.example" in question and "another site" in question, question
    h.driver.find_element("id", "fill").click()
    h.driver.switch_to.window(page)
    wait_for(lambda: h.value("password") == "bob-Secret-9", what="bob's password, confirmed in the chooser")
    loot = page_loot(h)
    assert_no_secrets("what the page saw besides the fill", {k: v for k, v in loot.items() if k != "values"})


def cross_site_frame(h):
    """A frame of another site: its script gets nothing by itself; the person's confirmation in
    Keyhaven's own frame fills it."""
    h.pair()
    h.driver.get(f"{h.other}/frame.html?src={h.site}/hostile-login.html")
    h.driver.switch_to.frame(h.driver.find_element("id", "frame"))
    wait_for(lambda: h.driver.find_element("id", "user"), what="the framed form")
    time.sleep(0.8)
    h.driver.execute_async_script("window.attackField('user').then(arguments[arguments.length - 1])")
    assert not shown_in_page(h) and h.ui.view() is None
    assert_no_secrets("the framed page's reads", page_loot(h))
    # The person picks "ada" (again if a click landed inside the guard of a menu being re-shown).
    click_until(lambda: h.choose(h.driver.find_element("id", "user"), "ada"),
                lambda: "another site" in h.menu_text(), what="the cross-site question")
    h.driver.execute_script("window.clickKeyhaven();")
    time.sleep(0.8)
    assert h.value("password") == "", "the frame's synthetic click confirmed the fill"
    next(o for o in h.menu_options() if o.text.startswith("Fill ada")).click()
    wait_for(lambda: h.value("password") == "ada-Secret-1", what="the fill the person confirmed")


def save_prompt(h):
    """Review #4: a script-submitted form neither changes the saved password, nor tells the page
    whether its guess is the saved one, nor adds entries; the person's own submit still offers it."""
    before = json.loads(h.keyhaven("list", "--json").stdout)
    h.pair()
    h.driver.get(h.site + "/hostile-login.html")
    time.sleep(0.8)
    observations = []
    for password in ["Attacker-Chosen-1", "ada-Secret-1"]:
        h.driver.execute_script("window.scriptSubmit('ada', arguments[0])", password)
        time.sleep(1.5)
        observations.append((shown_in_page(h), h.ui.view()))
    assert observations == [(False, None), (False, None)], observations
    for index in range(25):
        h.driver.execute_script("window.scriptSubmit(arguments[0], 'Junk-Password-' + arguments[0])", f"junk-{index}")
    time.sleep(1.5)
    assert not shown_in_page(h)
    assert json.loads(h.keyhaven("list", "--json").stdout) == before
    assert "ada-Secret-1" in h.keyhaven("show", f"{h.site}/ada", "--reveal").stdout

    # The person types, and the page swaps the value before the person's submit: nothing offered.
    field = h.driver.find_element("id", "password")
    h.driver.execute_script("document.getElementById('user').value = 'ada'")
    field.send_keys("Typed-By-Ada-5")
    h.driver.execute_script("document.getElementById('password').value = 'Attacker-Chosen-2'")
    h.driver.find_element("id", "submit").click()
    time.sleep(1.5)
    assert not shown_in_page(h) and h.ui.view() is None

    # The person's own: typed and submitted by them. The page cannot press "Update" either.
    field.clear()
    field.send_keys("ada-Secret-2")
    h.driver.find_element("id", "submit").click()
    def update_button():
        return wait_for(lambda: next((o for o in h.menu_options() if o.text == "Update"), None), what="the update prompt")
    update_button()
    h.driver.execute_script("window.readKeyhaven(); window.clickKeyhaven();")
    time.sleep(0.8)
    assert "ada-Secret-1" in h.keyhaven("show", f"{h.site}/ada", "--reveal").stdout
    assert_no_secrets("the page's reads of the prompt", page_loot(h)["reads"])
    click_until(lambda: update_button().click(),
                lambda: "ada-Secret-2" in h.keyhaven("show", f"{h.site}/ada", "--reveal").stdout, what="the update")


def register_passkey(h, origin, user="ada"):
    h.driver.get(origin + "/passkey.html")
    A.run_in_page(h, "create", {"userId": "user-7", "user": user, "displayName": user, "challenge": b64(os.urandom(32))})
    A.press(h, "Save passkey in Keyhaven")
    created = A.page_outcome(h, "create()")
    assert "ok" in created, created
    return created


def passkey_without_the_person(h):
    """Review #2: a script on the relying party's page starts a conditional get, focuses the field
    and clicks Keyhaven's menu itself: no menu, no names, no assertion. The person's click on the
    passkey in the menu signs, with UP."""
    origin = h.other
    h.pair()
    register_passkey(h, origin)
    h.driver.get(origin + "/hostile-passkey.html")
    time.sleep(0.8)
    A.run_in_page(h, "conditional", {"challenge": b64(os.urandom(32))})
    h.driver.execute_async_script("window.attackField('user').then(arguments[arguments.length - 1])")
    assert h.driver.execute_script("return window.outcome") is None, "the page got an assertion by itself"
    assert not shown_in_page(h) and h.ui.view() is None
    assert_no_secrets("the page's reads", page_loot(h))
    assert "ada" not in json.dumps(page_loot(h)["reads"])

    h.driver.find_element("id", "user").click()
    row = wait_for(lambda: next((o for o in h.menu_options() if "passkey · localhost" in o.text), None), what="the passkey row")
    h.driver.execute_script("window.clickKeyhaven();")
    time.sleep(0.8)
    assert h.driver.execute_script("return window.outcome") is None, "a synthetic click used the passkey"
    assert "ada" not in json.dumps(page_loot(h)["reads"])
    # The person's click. A click that lands while the menu is being shown again (the field's own
    # focus handling, a late view) is ignored by the frame's guard, as it should be; a person then
    # clicks again, and so does the test, with the row read afresh.
    outcome = None
    for _ in range(3):
        row.click()
        try:
            outcome = wait_for(lambda: h.driver.execute_script("return window.outcome"), timeout=4,
                               what="the conditional get() after the person's choice")
            break
        except AssertionError:
            h.driver.find_element("id", "user").click()
            time.sleep(0.6)  # past the guard of a menu shown again
            row = wait_for(lambda: next((o for o in h.menu_options() if "passkey · localhost" in o.text), None),
                           what="the passkey row again")
    assert outcome, "the person's clicks on the passkey row did nothing"
    flags = base64.urlsafe_b64decode(outcome["ok"]["response"]["authenticatorData"] + "==")[32]
    assert flags & 0x01, f"no user presence after the person's choice: {flags:#x}"


def covered_sheet(h):
    """Clickjacking: the page fades Keyhaven's sheet, or opens its own top-layer element over it;
    the person's click then does nothing until the sheet is really shown again."""
    origin = h.other
    h.pair()
    register_passkey(h, origin)
    h.driver.get(origin + "/hostile-passkey.html")
    A.run_in_page(h, "get", {"challenge": b64(os.urandom(32))})
    A.sheet(h)
    # The page fades Keyhaven's element (it is in the page's DOM) to nearly invisible.
    h.driver.execute_script(
        "const k = document.querySelector('keyhaven-ui'); window.__style = k.getAttribute('style');"
        "k.style.setProperty('opacity', '0.02', 'important');")
    time.sleep(0.6)
    ada = next(b for b in A.sheet_buttons(h) if b.text.split("\n")[0] == "ada")
    ada.click_once()
    time.sleep(1.2)
    assert h.driver.execute_script("return window.outcome") is None, "a click on a faded sheet signed"
    h.driver.execute_script("document.querySelector('keyhaven-ui').setAttribute('style', window.__style)")
    time.sleep(0.5)
    # The page opens a decoy in the top layer just before the person clicks: Keyhaven goes back on
    # top and ignores clicks for a moment.
    h.driver.execute_script(
        "const d = document.createElement('div'); d.popover = 'manual'; d.textContent = 'Win a prize!';"
        "d.style.cssText = 'position:fixed;inset:0;pointer-events:none;background:#fff;opacity:1';"
        "document.body.append(d); d.showPopover();")
    ada = next(b for b in A.sheet_buttons(h) if b.text.split("\n")[0] == "ada")
    ada.shown["rendered"] = time.time() * 1000 - 1000  # the test clicks at once (no wait)
    ada.click_once()
    time.sleep(1.0)
    assert h.driver.execute_script("return window.outcome") is None, "a click right after a top-layer decoy signed"
    next(b for b in A.sheet_buttons(h) if b.text.split("\n")[0] == "ada").click()
    outcome = A.page_outcome(h, "the get() after the person's click on the shown sheet")
    assert "ok" in outcome, outcome


def unserved_call_ends_at_once(h):
    """Review #3: a call Keyhaven does not serve (http://rp.localhost: not an RP ID Keyhaven
    accepts) fails at once instead of staying pending."""
    h.pair()
    port = h.b.server_address[1]
    h.driver.get(f"http://rp.localhost:{port}/passkey.html")
    for kind, options in (("get", {"challenge": b64(os.urandom(16))}),
                          ("create", {"userId": "u", "user": "ada", "displayName": "Ada", "challenge": b64(os.urandom(16))})):
        started = time.time()
        A.run_in_page(h, kind, options)
        outcome = wait_for(lambda: h.driver.execute_script("return window.outcome"), timeout=5, what=f"{kind}() to end")
        assert "error" in outcome and time.time() - started < 5, outcome
        assert A.sheet_text(h) == ""


def cross_origin_passkey_frame(h):
    """Review #11: a passkey made in a cross-origin frame (allowed by its embedder) says so in its
    client data: crossOrigin true and the top origin."""
    h.pair()
    allow = "publickey-credentials-create *; publickey-credentials-get *"
    h.driver.get(f"{h.site}/frame.html?src={h.other}/passkey.html&allow={allow}")
    h.driver.switch_to.frame(h.driver.find_element("id", "frame"))
    # Chromium lets a cross-origin frame create a credential only right after the person's own click.
    wait_for(lambda: h.driver.find_element("id", "user"), what="the framed page").click()
    A.run_in_page(h, "create", {"userId": "user-9", "user": "ada", "displayName": "Ada", "challenge": b64(os.urandom(32))})
    A.press(h, "Save passkey in Keyhaven")
    outcome = A.page_outcome(h, "the framed create()")
    client = json.loads(base64.urlsafe_b64decode(outcome["ok"]["response"]["clientDataJSON"] + "=="))
    assert client["crossOrigin"] is True and client["topOrigin"] == h.site and client["origin"] == h.other, client


def forged_request_fields(h):
    """Review #10: the page posts signals carrying `id`, `v` and `type` of its choosing, hundreds of
    times, while the person fills: the sealed requests keep their own id and type (a reply never
    resolves another request), nothing is saved, and the person's fill is the right one."""
    h.pair()
    before = json.loads(h.keyhaven("list", "--json").stdout)
    h.driver.get(h.site + "/login.html")
    h.driver.execute_script("""
        window.__spam = setInterval(() => {
          for (let id = 1; id <= 40; id++) {
            window.postMessage({__keyhaven: 'passkey.signal', signal: {kind: 'unknownCredential', rpId: '127.0.0.1',
              credentialId: 'AAAA', id, v: 9, type: 'credential.save', url: location.href, user: 'mallory',
              password: 'Forged-1', origin: 'https://bank.example'}}, '*');
          }
        }, 20);""")
    for _ in range(3):
        h.choose(h.driver.find_element("id", "user"), "ada")
        wait_for(lambda: h.value("password") == "ada-Secret-1", what="the person's fill amid forged requests")
        h.driver.execute_script("document.getElementById('user').value = ''; document.getElementById('password').value = '';"
                                "document.querySelector('h1').click();")
    h.driver.execute_script("clearInterval(window.__spam)")
    assert json.loads(h.keyhaven("list", "--json").stdout) == before


SCENARIOS = {f.__name__: f for f in [steal_the_vault, forged_request_fields, cross_site_frame, save_prompt, passkey_without_the_person,
                                     covered_sheet, unserved_call_ends_at_once, cross_origin_passkey_frame]}


def main(names):
    scenarios = dict(SCENARIOS)
    try:
        import hostile_firefox
        scenarios.update(hostile_firefox.SCENARIOS)
    except ImportError:
        pass

    def harness(name):
        if name.startswith("firefox"):
            return None
        return A.Harness()

    return run_scenarios(names, scenarios, harness,
                         lambda name: pathlib.Path(os.environ.get("KEYHAVEN_SCREENSHOTS", "/tmp")) / f"hostile-{name}.png")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
