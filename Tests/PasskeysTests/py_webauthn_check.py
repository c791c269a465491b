#!/usr/bin/env python3
"""Verifies Keyhaven's authenticator with an independent relying party: PyPI `webauthn`
(py_webauthn). Reads one JSON document on standard input:

    {"origin", "rpId", "registration": {"challenge", "credential"},
     "authentications": [{"challenge", "credential"}, ...]}

(challenges in base64url; credentials as the authenticator's PublicKeyCredential JSON). Prints one
line per check and exits non-zero at the first that fails.
"""
import base64
import json
import sys

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_der_public_key
from webauthn import verify_authentication_response, verify_registration_response
from webauthn.helpers import decode_credential_public_key


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


job = json.load(sys.stdin)
try:
    registration = verify_registration_response(
        credential=job["registration"]["credential"],
        expected_challenge=unb64(job["registration"]["challenge"]),
        expected_rp_id=job["rpId"],
        expected_origin=job["origin"],
        require_user_verification=True,
    )
except Exception as error:
    print(f"registration refused: {type(error).__name__}: {error}")
    sys.exit(1)
# The response's `publicKey` (what getPublicKey() gives a page) must be the attested key, as DER.
spki = load_der_public_key(unb64(job["registration"]["credential"]["response"]["publicKey"]))
cose = decode_credential_public_key(registration.credential_public_key)
if hasattr(cose, "y"):
    raw, expected = spki.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint), b"\x04" + cose.x + cose.y
else:
    raw, expected = spki.public_bytes(Encoding.Raw, PublicFormat.Raw), cose.x
if raw != expected:
    print("publicKey (SPKI) is not the attested credential key")
    sys.exit(1)
print(f"ok registration fmt={registration.fmt} backed_up={registration.credential_backed_up} "
      f"device_type={registration.credential_device_type}")
count = registration.sign_count
for index, step in enumerate(job["authentications"]):
    try:
        verified = verify_authentication_response(
            credential=step["credential"],
            expected_challenge=unb64(step["challenge"]),
            expected_rp_id=job["rpId"],
            expected_origin=job["origin"],
            credential_public_key=registration.credential_public_key,
            credential_current_sign_count=count,
            require_user_verification=True,
        )
    except Exception as error:
        print(f"authentication {index} refused: {type(error).__name__}: {error}")
        sys.exit(1)
    count = verified.new_sign_count
    print(f"ok authentication {index} sign_count={count}")
