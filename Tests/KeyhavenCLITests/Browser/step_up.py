#!/usr/bin/env python3
"""Drives shiny's step-up page in headless Chromium, as a person would.

    python3 step_up.py URL TOTP_SECRET confirm|cancel

confirm: checks the page names the account, types the current authenticator code, presses Confirm,
and waits for "Your password was changed." cancel: presses Cancel and waits for "Cancelled".
Prints OK on success; exits non-zero with a reason otherwise.
"""
import base64, hashlib, hmac, struct, sys, time
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

url, secret, action = sys.argv[1], sys.argv[2], sys.argv[3]


def totp(secret, at=None):
    key = base64.b32decode(secret.upper() + "=" * (-len(secret) % 8))
    counter = int((at or time.time()) // 30)
    mac = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = mac[-1] & 0x0F
    return "%06d" % ((struct.unpack(">I", mac[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000)


options = Options()
for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=800,600"]:
    options.add_argument(argument)
options.binary_location = "/usr/bin/chromium"
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    driver.get(url)
    wait = WebDriverWait(driver, 15)
    user = wait.until(EC.presence_of_element_located((By.ID, "user"))).text
    assert user == "bob", f"the page names {user!r}"
    if action == "confirm":
        field = driver.find_element(By.ID, "code")
        field.send_keys(totp(secret))
        driver.find_element(By.ID, "verify").click()
        result = wait.until(EC.presence_of_element_located((By.ID, "result"))).text
        assert result == "Your password was changed.", result
    else:
        driver.find_element(By.ID, "cancel").click()
        result = wait.until(EC.presence_of_element_located((By.ID, "result"))).text
        assert result.startswith("Cancelled"), result
    print("OK", driver.title)
finally:
    driver.quit()
