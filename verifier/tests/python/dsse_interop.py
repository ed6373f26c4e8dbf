"""DSSE interop helper for receipts/tests/interop_python.rs, using securesystemslib's own
Envelope / SSlibKey / CryptoSigner API (securesystemslib[crypto] 1.6.0).

  dsse_interop.py sign <seed-hex> <payload-file> <envelope-out>
      Sign the payload as application/vnd.in-toto+json with the Ed25519 key of the
      32-byte seed; write the envelope JSON (Envelope.to_dict) to <envelope-out>.
  dsse_interop.py verify <envelope-file> <public-hex>
      Verify the envelope with the public key (threshold 1); print the keyid that
      verified. Exit 0 when it verifies, 1 when it does not.
"""

import json
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import CryptoSigner, SSlibKey

PAYLOAD_TYPE = "application/vnd.in-toto+json"


def sign(seed_hex: str, payload_path: str, out_path: str) -> int:
    private_key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed_hex))
    signer = CryptoSigner(private_key)
    with open(payload_path, "rb") as f:
        payload = f.read()
    envelope = Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures={})
    envelope.sign(signer)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(envelope.to_dict(), f)
    print(signer.public_key.keyid)
    return 0


def verify(envelope_path: str, public_hex: str) -> int:
    # from_crypto computes securesystemslib's default keyid itself, independently of ours.
    key = SSlibKey.from_crypto(Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_hex)))
    with open(envelope_path, encoding="utf-8") as f:
        envelope = Envelope.from_dict(json.load(f))
    if envelope.payload_type != PAYLOAD_TYPE:
        print(f"payloadType {envelope.payload_type!r}", file=sys.stderr)
        return 1
    try:
        accepted = envelope.verify([key], 1)
    except VerificationError as e:
        print(f"not verified: {e}", file=sys.stderr)
        return 1
    print(",".join(accepted))
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 5 and argv[1] == "sign":
        return sign(argv[2], argv[3], argv[4])
    if len(argv) == 4 and argv[1] == "verify":
        return verify(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
