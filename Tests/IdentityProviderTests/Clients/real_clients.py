"""Real, independent clients against a running Keyhaven identity provider.

Run by IdentityProviderTests/RealClientTests.swift:
    python3 real_clients.py BASE_URL CLIENT_ID REDIRECT_URI TEAM_ID KEY_ID P8_FILE EMAIL PASSWORD

1. authlib (on joserfc) does a whole code flow the way an app would: discovery, an authorization URL
   with a nonce, the provider's sign-in and consent pages (driven with requests), the code
   exchanged with a client_secret that *joserfc* signed from the team's .p8 key, then
   parse_id_token, which checks iss, aud, exp, iat, the nonce and at_hash.
2. PyJWT verifies the same id_token through PyJWKClient (JWKS by kid) with audience and issuer.
3. joserfc verifies it with the key set and a claims registry.
Prints one JSON object with what each client saw; exits non-zero on any failure.
"""
import html
import json
import re
import secrets
import sys
import time

import jwt as pyjwt
import requests
from authlib.integrations.base_client.sync_app import BaseApp, OAuth2Mixin
from authlib.integrations.base_client.sync_openid import OpenIDMixin
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt as jose_jwt
from joserfc.jwk import ECKey, KeySet

base, client_id, redirect_uri, team_id, key_id, p8_path, email, password = sys.argv[1:9]
discovery_url = base + "/.well-known/openid-configuration"
metadata = requests.get(discovery_url, timeout=10).json()
issuer = metadata["issuer"]

# The client secret, signed by joserfc: ES256, iss team, aud issuer, sub client id, 180 days.
now = int(time.time())
with open(p8_path) as f:
    team_key = ECKey.import_key(f.read())
client_secret = jose_jwt.encode(
    {"alg": "ES256", "kid": key_id},
    {"iss": team_id, "iat": now, "exp": now + 180 * 86400, "aud": issuer, "sub": client_id},
    team_key,
)


class App(OAuth2Mixin, OpenIDMixin, BaseApp):
    client_cls = OAuth2Session


app = App(
    framework=None,
    name="keyhaven",
    client_id=client_id,
    client_secret=client_secret,
    server_metadata_url=discovery_url,
    client_kwargs={"scope": "openid email name", "token_endpoint_auth_method": "client_secret_post"},
    authorize_params={"response_mode": "form_post"},
)
nonce = secrets.token_urlsafe(16)
authorization = app.create_authorization_url(redirect_uri=redirect_uri, nonce=nonce)


def hidden_fields(page):
    pattern = r'<input type="hidden" name="([^"]*)" value="([^"]*)">'
    return {html.unescape(n): html.unescape(v) for n, v in re.findall(pattern, page)}


browser = requests.Session()
page = browser.get(authorization["url"], timeout=10)
page.raise_for_status()
fields = hidden_fields(page.text)
fields.update(email=email, password=password, action="signin")
page = browser.post(base + "/auth/authorize", data=fields, timeout=10)
if 'id="consent"' in page.text:
    fields = hidden_fields(page.text)
    fields.update(share_email="share", action="continue")
    page = browser.post(base + "/auth/authorize/consent", data=fields, timeout=10)
handoff = hidden_fields(page.text)
assert handoff.get("state") == authorization["state"], "state must come back unchanged: " + page.text[:800]
assert "code" in handoff, page.text[:500]

token = app.fetch_access_token(redirect_uri=redirect_uri, code=handoff["code"])
userinfo = app.parse_id_token(token, nonce)  # iss, aud, exp, iat, nonce and at_hash
assert userinfo["at_hash"], "a code-flow token carries at_hash"

id_token = token["id_token"]
signing_key = pyjwt.PyJWKClient(metadata["jwks_uri"]).get_signing_key_from_jwt(id_token)
pyjwt_claims = pyjwt.decode(
    id_token, signing_key.key, algorithms=["RS256"], audience=client_id, issuer=issuer, leeway=60
)

key_set = KeySet.import_key_set(requests.get(metadata["jwks_uri"], timeout=10).json())
decoded = jose_jwt.decode(id_token, key_set, algorithms=["RS256"])
jose_jwt.JWTClaimsRegistry(
    iss={"essential": True, "value": issuer},
    aud={"essential": True, "value": client_id},
    nonce={"essential": True, "value": nonce},
    leeway=60,
).validate(decoded.claims)

print(
    json.dumps(
        {
            "authlib": {"sub": userinfo["sub"], "email": userinfo.get("email"), "at_hash": userinfo["at_hash"]},
            "pyjwt": {"sub": pyjwt_claims["sub"], "kid": signing_key.key_id},
            "joserfc": {"sub": decoded.claims["sub"], "alg": decoded.header["alg"]},
            "user": json.loads(handoff["user"]) if "user" in handoff else None,
            "refresh_token": bool(token.get("refresh_token")),
        }
    )
)
