#!/usr/bin/env python3
"""Recomputes docs/breach-psi.md's test vectors with nothing but Python's hashlib: an independent
RFC 9497 VOPRF(P-384, SHA-384) evaluation (RFC 9380 hash-to-curve P384_XMD:SHA-384_SSWU_RO_,
affine point arithmetic) next to swift-crypto's. It first reproduces RFC 9497's own vector, then
prints Keyhaven's block; BreachPSIVectorTests checks the same block against the Swift code.

Usage: scripts/breach-psi-vectors.py
"""
import hashlib

p = 2**384 - 2**128 - 2**96 + 2**32 - 1
n = 0xffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973
A = p - 3
B = 0xb3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8edd3ec2aef
Gx = 0xaa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e3872760ab7
Gy = 0x3617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c00a60b1ce1d7e819d7a431d7c90ea0e5f
def inv(x): return pow(x, p-2, p)
def add(P, Q):
    if P is None: return Q
    if Q is None: return P
    (x1,y1),(x2,y2) = P,Q
    if x1 == x2 and (y1 + y2) % p == 0: return None
    if P == Q: l = (3*x1*x1 + A) * inv(2*y1) % p
    else: l = (y2-y1) * inv(x2-x1) % p
    x3 = (l*l - x1 - x2) % p
    return (x3, (l*(x1-x3) - y1) % p)
def mul(k, P):
    R = None
    while k:
        if k & 1: R = add(R, P)
        P = add(P, P); k >>= 1
    return R
def ser(P):
    x,y = P
    return bytes([2 + (y & 1)]) + x.to_bytes(48,'big')
def H(b): return hashlib.sha384(b).digest()
def xmd(msg, dst, L):
    ell = -(-L // 48)
    dstp = dst + bytes([len(dst)])
    b0 = H(bytes(128) + msg + L.to_bytes(2,'big') + b'\0' + dstp)
    bs = [H(b0 + b'\1' + dstp)]
    for i in range(2, ell+1):
        bs.append(H(bytes(a ^ c for a, c in zip(b0, bs[-1])) + bytes([i]) + dstp))
    return b''.join(bs)[:L]
def sqrt(a): return pow(a, (p+1)//4, p)
def is_sq(a): return a == 0 or pow(a, (p-1)//2, p) == 1
Z = p - 12
def sswu(u):
    tv1 = (Z*Z*pow(u,4,p) + Z*u*u) % p
    tv1 = inv(tv1) if tv1 else 0
    if tv1 == 0: x1 = B * inv(Z*A) % p
    else: x1 = (p - B) * inv(A) % p * (1 + tv1) % p
    gx1 = (x1**3 + A*x1 + B) % p
    x2 = Z*u*u*x1 % p
    gx2 = (x2**3 + A*x2 + B) % p
    if is_sq(gx1): x, y = x1, sqrt(gx1)
    else: x, y = x2, sqrt(gx2)
    if (u & 1) != (y & 1): y = (p - y) % p
    return (x, y)
ctx = b'OPRFV1-\x01-P384-SHA384'
def h2g(msg):
    dst = b'HashToGroup-' + ctx
    bts = xmd(msg, dst, 144)
    u0 = int.from_bytes(bts[:72],'big') % p
    u1 = int.from_bytes(bts[72:],'big') % p
    return add(sswu(u0), sswu(u1))
def evaluate(k, msg):
    E = ser(mul(k, h2g(msg)))
    return H(len(msg).to_bytes(2,'big') + msg + len(E).to_bytes(2,'big') + E + b'Finalize')


def main():
    sk = int("051646b9e6e7a71ae27c1e1d0b87b4381db6d3595eeeb1adb41579adbf992f4278f9016eafc944edaa2b43183581779d", 16)
    pk = ser(mul(sk, (Gx, Gy)))
    assert pk.hex() == "031d689686c611991b55f1a1d8f4305ccd6cb719446f660a30db61b7aa87b46acf59b7c0d4a9077b3da21c25dd482229a0"
    assert evaluate(sk, b"\0").hex() == (
        "3333230886b562ffb8329a8be08fea8025755372817ec969d114d1203d026b4a622beab60220bf19078bca35a529b35c"
    ), "RFC 9497 vector 1"
    digest = hashlib.sha1(b"password").digest()
    bucket = hashlib.sha256(b"keyhaven breach-psi v1 bucket\0" + digest).digest()
    output = evaluate(sk, digest)
    print("key-id:", hashlib.sha256(b"keyhaven breach-psi v1 key\0" + pk).digest()[:16].hex())
    print("password: password")
    print("sha1:", digest.hex().upper())
    print("prefix:", int.from_bytes(bucket[:2], "big") >> 1)
    print("output:", output.hex())
    print("entry:", output[:8].hex())


if __name__ == "__main__":
    main()
