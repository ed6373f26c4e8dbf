# Independent recomputation of the reference vectors in receipts/tests/tlog.rs: the RFC 6962
# 8-leaf test tree of transparency-dev/merkle (roots, inclusion and consistency proofs, by
# the RFC's recursive definitions) and the PeterNeumann example of Go's sumdb/note
# (key id, derived public key, signature). Run: python3 tlog_vectors.py (needs `cryptography`).
import hashlib, base64
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
H=lambda b: hashlib.sha256(b).digest()
leaves=[b"",b"\x00",b"\x10",b"\x20\x21",b"\x30\x31",b"\x40\x41\x42\x43",bytes(range(0x50,0x58)),bytes(range(0x60,0x70))]
def k(n):
    p=1
    while p*2<n: p*=2
    return p
def mth(d):
    if len(d)==0: return H(b"")
    if len(d)==1: return H(b"\x00"+d[0])
    s=k(len(d)); return H(b"\x01"+mth(d[:s])+mth(d[s:]))
def path(m,d):
    if len(d)<=1: return []
    s=k(len(d))
    if m<s: return path(m,d[:s])+[mth(d[s:])]
    return path(m-s,d[s:])+[mth(d[:s])]
def sub(m,d,b):
    n=len(d)
    if m==n: return [] if b else [mth(d)]
    s=k(n)
    if m<=s: return sub(m,d[:s],b)+[mth(d[s:])]
    return sub(m-s,d[s:],False)+[mth(d[:s])]
for n in range(1,9): print("root",n,mth(leaves[:n]).hex())
for (i,n) in [(0,1),(0,8),(5,8),(2,3),(1,5)]: print("incl",i,n,[h.hex() for h in path(i,leaves[:n])])
for (m,n) in [(1,1),(1,8),(6,8),(2,5)]: print("cons",m,n,[h.hex() for h in sub(m,leaves[:n],True)])
# sumdb note example
vk="PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
sk="PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
pub=base64.b64decode(vk.split("+",2)[2])[1:]
seed=base64.b64decode(sk.split("+",4)[4])[1:]
priv=Ed25519PrivateKey.from_private_bytes(seed)
from cryptography.hazmat.primitives import serialization as s
print("derived pub matches", priv.public_key().public_bytes(s.Encoding.Raw,s.PublicFormat.Raw)==pub)
print("keyid", H(b"PeterNeumann\n\x01"+pub)[:4].hex())
text="If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n".encode()
sig=priv.sign(text)
print("sig", base64.b64encode(bytes.fromhex("c74f20a3")+sig).decode())
