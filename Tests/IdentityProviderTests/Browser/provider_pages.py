#!/usr/bin/env python3
"""Drives the provider's pages in headless Chromium, as a person would.

    python3 provider_pages.py SHINY_ORIGIN PROVIDER_URL CLIENT_ID EMAIL PASSWORD

1. On shiny, "Sign in with Keyhaven" leads to the provider's sign-in page; the person signs in,
   chooses "Hide my e-mail" on the consent page, and lands back on shiny's account page (after the
   form_post hand-off), signed in under a private relay address.
2. On the provider's account page the service is listed; "Stop using Sign in with Keyhaven" ends it.
3. Back on shiny, signing in with Keyhaven asks for consent again; Cancel returns to shiny with
   user_cancelled_authorize.
Prints OK and what it saw; exits non-zero with a reason otherwise. Screenshots of each page, light
and dark, go to $KEYHAVEN_SCREENSHOTS/provider (default .build/screenshots/provider).
"""
import os
import pathlib
import sys
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

shiny, provider, client_id, email, password = sys.argv[1:6]

options = Options()
for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=900,700"]:
    options.add_argument(argument)
options.binary_location = "/usr/bin/chromium"
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
wait = WebDriverWait(driver, 20)


def element(id_):
    return wait.until(EC.presence_of_element_located((By.ID, id_)))


SHOTS = pathlib.Path(os.environ.get("KEYHAVEN_SCREENSHOTS") or pathlib.Path(__file__).resolve().parents[3] / ".build/screenshots") / "provider"


def shot(name):
    """The page in light and dark (the one design system the app, the provider and shiny share)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
        driver.save_screenshot(str(SHOTS / f"{name}-{scheme}.png"))
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


try:
    # 1. Sign in with Keyhaven, hiding the address.
    driver.get(shiny + "/signin")
    shot("shiny-sign-in")
    element("sign-in-with-keyhaven").click()
    element("email")
    shot("sign-in")
    element("email").send_keys(email)
    element("password").send_keys(password)
    element("submit").click()
    assert "Shiny" in element("consent").text or "Shiny" in driver.page_source, "the consent page names the service"
    shot("consent")
    element("hide").click()
    element("continue").click()
    welcome = element("welcome").text
    assert driver.current_url.startswith(shiny), driver.current_url
    assert "@privaterelay." in welcome, welcome
    assert "signs in with Keyhaven" in element("linked").text

    # 2. The provider's account page: stop using the service.
    driver.get(provider + "/account")
    listed = element("service-" + client_id).text
    shot("account")
    assert "authorized" in listed and "@privaterelay." in listed, listed
    element("stop-" + client_id).click()
    message = element("message").text
    assert message.startswith("Stopped using"), message
    assert "revoked" in element("service-" + client_id).text

    # 3. Consent is asked again; Cancel goes back to shiny with user_cancelled_authorize.
    driver.get(shiny + "/signin")
    element("sign-in-with-keyhaven").click()
    element("cancel").click()
    error = element("error").text
    assert "user_cancelled_authorize" in error, error
    print("OK", welcome)
finally:
    driver.quit()
