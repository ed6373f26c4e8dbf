//! Keys and DSSE: RFC 8032 §7.1 vectors, ed25519-speccheck's 12 cases under
//! `verify_strict`, the DSSE PAE vector, securesystemslib keyids, strict base64, key files
//! and the keyring.

use std::os::unix::fs::PermissionsExt;

use receipts::dsse::{self, Envelope, EnvelopeError, IN_TOTO_PAYLOAD_TYPE};
use receipts::keys::{
    KeyError, Keyring, PrivateKey, PublicKey, TrustedKey, generate_key_pair, keyid_of,
};
use receipts::model::Timestamp;

fn hex32(s: &str) -> [u8; 32] {
    hex::decode(s).expect("hex").try_into().expect("32 bytes")
}

/// RFC 8032 §7.1 TEST 1, 2 and 3: (secret key, public key, message, signature).
const RFC8032: &[(&str, &str, &str, &str)] = &[
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
    ),
];

#[test]
fn rfc8032_section_7_1_vectors() {
    for (secret, public, message, signature) in RFC8032 {
        let key = PrivateKey::from_seed(&hex32(secret));
        assert_eq!(key.public().to_hex(), *public);
        let message = hex::decode(message).expect("hex");
        let sig = key.sign(&message);
        assert_eq!(hex::encode(sig), *signature);
        let public = PublicKey::from_hex(public, "test", "public").expect("valid key");
        assert!(public.verify_strict(&message, &sig));
        let mut other = message.clone();
        other.push(0);
        assert!(!public.verify_strict(&other, &sig));
        // Not 64 bytes: never valid.
        assert!(!public.verify_strict(&message, &sig[..63]));
        let mut long = sig.to_vec();
        long.push(0);
        assert!(!public.verify_strict(&message, &long));
    }
}

/// The securesystemslib default keyid of the RFC 8032 TEST 1 key (content/receipts.md §Envelope).
#[test]
fn keyid_of_rfc8032_test1_key() {
    let public = hex32("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    assert_eq!(
        keyid_of(&public),
        "74c181c7ad8a0855d4b55e44d2ba87aabdddb196832571f15f92fece332e4916"
    );
    let key = PrivateKey::from_seed(&hex32(RFC8032[0].0));
    assert_eq!(
        key.keyid(),
        "74c181c7ad8a0855d4b55e44d2ba87aabdddb196832571f15f92fece332e4916"
    );
}

/// novifinancial/ed25519-speccheck `cases.json`, the 12 cases: (message, public key,
/// signature). Row "Dalek strict" of its results table: only case 3 verifies.
const SPECCHECK: &[(&str, &str, &str)] = &[
    (
        "8c93255d71dcab10e8f379c26200f3c7bd5f09d9bc3068d3ef4edeb4853022b6",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a0000000000000000000000000000000000000000000000000000000000000000",
    ),
    (
        "9bd9f44f4dcc75bd531b56b2cd280b0bb38fc1cd6d1230e14861d861de092e79",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        "f7badec5b8abeaf699583992219b7b223f1df3fbbea919844e3f7c554a43dd43a5bb704786be79fc476f91d3f3f89b03984d8068dcf1bb7dfc6637b45450ac04",
    ),
    (
        "aebf3f2601a0c8c5d39cc7d8911642f740b78168218da8471772b35f9d35b9ab",
        "f7badec5b8abeaf699583992219b7b223f1df3fbbea919844e3f7c554a43dd43",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa8c4bd45aecaca5b24fb97bc10ac27ac8751a7dfe1baff8b953ec9f5833ca260e",
    ),
    (
        "9bd9f44f4dcc75bd531b56b2cd280b0bb38fc1cd6d1230e14861d861de092e79",
        "cdb267ce40c5cd45306fa5d2f29731459387dbf9eb933b7bd5aed9a765b88d4d",
        "9046a64750444938de19f227bb80485e92b83fdb4b6506c160484c016cc1852f87909e14428a7a1d62e9f22f3d3ad7802db02eb2e688b6c52fcd6648a98bd009",
    ),
    (
        "e47d62c63f830dc7a6851a0b1f33ae4bb2f507fb6cffec4011eaccd55b53f56c",
        "cdb267ce40c5cd45306fa5d2f29731459387dbf9eb933b7bd5aed9a765b88d4d",
        "160a1cb0dc9c0258cd0a7d23e94d8fa878bcb1925f2c64246b2dee1796bed5125ec6bc982a269b723e0668e540911a9a6a58921d6925e434ab10aa7940551a09",
    ),
    (
        "e47d62c63f830dc7a6851a0b1f33ae4bb2f507fb6cffec4011eaccd55b53f56c",
        "cdb267ce40c5cd45306fa5d2f29731459387dbf9eb933b7bd5aed9a765b88d4d",
        "21122a84e0b5fca4052f5b1235c80a537878b38f3142356b2c2384ebad4668b7e40bc836dac0f71076f9abe3a53f9c03c1ceeeddb658d0030494ace586687405",
    ),
    (
        "85e241a07d148b41e47d62c63f830dc7a6851a0b1f33ae4bb2f507fb6cffec40",
        "442aad9f089ad9e14647b1ef9099a1ff4798d78589e66f28eca69c11f582a623",
        "e96f66be976d82e60150baecff9906684aebb1ef181f67a7189ac78ea23b6c0e547f7690a0e2ddcd04d87dbc3490dc19b3b3052f7ff0538cb68afb369ba3a514",
    ),
    (
        "85e241a07d148b41e47d62c63f830dc7a6851a0b1f33ae4bb2f507fb6cffec40",
        "442aad9f089ad9e14647b1ef9099a1ff4798d78589e66f28eca69c11f582a623",
        "8ce5b96c8f26d0ab6c47958c9e68b937104cd36e13c33566acd2fe8d38aa19427e71f98a473474f2f13f06f97c20d58cc3f54b8bd0d272f42b695dd7e89a8c22",
    ),
    (
        "9bedc267423725d473888631ebf45988bad3db83851ee85c85e241a07d148b41",
        "f7badec5b8abeaf699583992219b7b223f1df3fbbea919844e3f7c554a43dd43",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff03be9678ac102edcd92b0210bb34d7428d12ffc5df5f37e359941266a4e35f0f",
    ),
    (
        "9bedc267423725d473888631ebf45988bad3db83851ee85c85e241a07d148b41",
        "f7badec5b8abeaf699583992219b7b223f1df3fbbea919844e3f7c554a43dd43",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffca8c5b64cd208982aa38d4936621a4775aa233aa0505711d8fdcfdaa943d4908",
    ),
    (
        "e96b7021eb39c1a163b6da4e3093dcd3f21387da4cc4572be588fafae23c155b",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "a9d55260f765261eb9b84e106f665e00b867287a761990d7135963ee0a7d59dca5bb704786be79fc476f91d3f3f89b03984d8068dcf1bb7dfc6637b45450ac04",
    ),
    (
        "39a591f5321bbe07fd5a23dc2f39d025d74526615746727ceefd6e82ae65c06f",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "a9d55260f765261eb9b84e106f665e00b867287a761990d7135963ee0a7d59dca5bb704786be79fc476f91d3f3f89b03984d8068dcf1bb7dfc6637b45450ac04",
    ),
];

/// Our verdict on each speccheck case: the key must load (not weak, a curve point) and
/// `verify_strict` must accept. Only case 3 passes, as in the "Dalek strict" row.
#[test]
fn ed25519_speccheck_verdicts() {
    let verdicts: Vec<bool> = SPECCHECK
        .iter()
        .map(|(message, public, signature)| {
            let message = hex::decode(message).expect("hex");
            let signature = hex::decode(signature).expect("hex");
            PublicKey::from_hex(public, "speccheck", "pub_key")
                .is_ok_and(|key| key.verify_strict(&message, &signature))
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            false, false, false, true, false, false, false, false, false, false, false, false
        ]
    );
}

/// Small-order public keys are refused at load (speccheck cases 0 and 1 use one; the
/// identity point is another).
#[test]
fn weak_public_keys_are_refused() {
    for weak in [
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        "0100000000000000000000000000000000000000000000000000000000000000",
    ] {
        match PublicKey::from_hex(weak, "ring.json", "[0].keyval.public") {
            Err(KeyError::BadPublicKey { problem, field, .. }) => {
                assert_eq!(problem, "a weak (small-order) key");
                assert_eq!(field, "[0].keyval.public");
            }
            other => panic!("{weak}: {other:?}"),
        }
    }
    assert!(matches!(
        PublicKey::from_hex(
            "D75A980182B10AB7D54BFED3C964073A0EE172F3DAA62325AF021A68F707511A",
            "x",
            "y"
        ),
        Err(KeyError::BadPublicKey { .. })
    ));
}

/// DSSE `protocol.md` PAE vector.
#[test]
fn dsse_pae_vector() {
    assert_eq!(
        dsse::pae("http://example.com/HelloWorld", b"hello world"),
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    );
    // Lengths count bytes, not characters.
    assert_eq!(dsse::pae("é", "ü".as_bytes()), "DSSEv1 2 é 2 ü".as_bytes());
}

#[test]
fn base64_reading_rules() {
    assert_eq!(dsse::encode_base64(b"\xfb\xff"), "+/8=");
    assert_eq!(dsse::decode_base64("+/8=").expect("standard"), b"\xfb\xff");
    assert_eq!(dsse::decode_base64("+/8").expect("unpadded"), b"\xfb\xff");
    assert_eq!(dsse::decode_base64("-_8=").expect("url-safe"), b"\xfb\xff");
    // Non-canonical trailing bits: "+/9=" decodes to the same bytes with a set low bit.
    assert!(dsse::decode_base64("+/9=").is_err());
    // Wrong padding.
    assert!(dsse::decode_base64("+/8==").is_err());
    assert!(dsse::decode_base64("+/=8").is_err());
    assert!(dsse::decode_base64("+_8=").is_err(), "mixed alphabets");
    assert!(dsse::decode_base64("a b=").is_err());
}

/// Padding, when present, must be exactly right: a partial `=` (which the base64 crate's
/// padding-indifferent mode accepts) is refused in both alphabets, as is too much.
#[test]
fn base64_partial_padding_is_refused() {
    assert_eq!(dsse::decode_base64("AA==").expect("padded"), b"\0");
    assert_eq!(dsse::decode_base64("AA").expect("unpadded"), b"\0");
    assert_eq!(dsse::decode_base64("AAA=").expect("padded"), b"\0\0");
    assert_eq!(dsse::decode_base64("AAA").expect("unpadded"), b"\0\0");
    assert_eq!(
        dsse::decode_base64("-_8").expect("url-safe unpadded"),
        b"\xfb\xff"
    );
    assert_eq!(dsse::decode_base64("").expect("empty"), b"");
    for text in ["AA=", "AA===", "-A=", "+/8=A", "AAA==", "=", "A==="] {
        assert!(dsse::decode_base64(text).is_err(), "{text} must be refused");
    }
    assert_eq!(
        dsse::decode_base64("AA=").unwrap_err(),
        "Invalid padding",
        "the decoder's message"
    );
}

#[test]
fn envelope_sign_verify_and_tolerant_read() {
    let key = PrivateKey::from_seed(&hex32(RFC8032[0].0));
    let other = PrivateKey::from_seed(&hex32(RFC8032[1].0));
    let envelope = Envelope::sign(IN_TOTO_PAYLOAD_TYPE, b"{}".to_vec(), &[&key, &other]);
    let bytes = envelope.to_file_bytes().expect("canonical");
    let text = String::from_utf8(bytes.clone()).expect("utf-8");
    assert!(text.starts_with(r#"{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"keyid":"74c181c7"#));
    let read = Envelope::from_json(&bytes, 1 << 20).expect("reads back");
    assert_eq!(read, envelope);
    let keys = [key.public().clone(), other.public().clone()];
    assert_eq!(read.verify(&keys, 2).expect("both verify").len(), 2);
    assert!(matches!(
        read.verify(&keys[..1], 2),
        Err(EnvelopeError::ThresholdNotMet {
            verified: 1,
            threshold: 2
        })
    ));
    // Another tool's spacing and URL-safe base64 are read.
    let mut raw = envelope.to_raw();
    for signature in &mut raw.signatures {
        signature.sig = signature
            .sig
            .replace('+', "-")
            .replace('/', "_")
            .replace('=', "");
    }
    let loose = serde_json::to_string_pretty(&raw).expect("json");
    assert_eq!(
        Envelope::from_json(loose.as_bytes(), 1 << 20).expect("tolerant"),
        envelope
    );
    // Case-fold collisions with known keys are refused.
    let folded = text.replacen(
        "\"payloadType\"",
        "\"payloadtype\":\"x\",\"payloadType\"",
        1,
    );
    assert!(matches!(
        Envelope::from_json(folded.as_bytes(), 1 << 20),
        Err(EnvelopeError::CaseFoldCollision {
            known: "payloadType",
            ..
        })
    ));
    let mut wrong_type = envelope.clone();
    wrong_type.payload_type = "application/vnd.in-toto+json ".into();
    assert!(matches!(
        wrong_type.verify(&keys, 1),
        Err(EnvelopeError::PayloadType { .. })
    ));
}

#[test]
fn key_files_round_trip_and_refuse_loose_modes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("operator");
    let file = generate_key_pair(&out).expect("generates");
    let key_path = dir.path().join("operator.key");
    let pub_path = dir.path().join("operator.pub");
    let mode = std::fs::metadata(&key_path)
        .expect("key")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let key = PrivateKey::load(&key_path).expect("loads");
    assert_eq!(key.keyid(), file.keyid);
    let public = PublicKey::load(&pub_path).expect("pub loads");
    assert_eq!(public.keyid(), file.keyid);
    // The .pub file is the securesystemslib dict plus keyid, canonical.
    let text = std::fs::read_to_string(&pub_path).expect("read");
    assert_eq!(
        text,
        format!(
            r#"{{"keyid":"{}","keytype":"ed25519","keyval":{{"public":"{}"}},"scheme":"ed25519"}}"#,
            file.keyid,
            public.to_hex()
        )
    );
    // Debug never shows the seed.
    let seed_hex = std::fs::read_to_string(&key_path).expect("read");
    assert!(!format!("{key:?}").contains(seed_hex.trim()));
    // Refuses to overwrite.
    assert!(matches!(
        generate_key_pair(&out),
        Err(KeyError::AlreadyExists { .. })
    ));
    // Loose permissions.
    for loose in [0o640, 0o604, 0o644, 0o660] {
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(loose)).expect("chmod");
        match PrivateKey::load(&key_path) {
            Err(KeyError::LoosePermissions { mode, path }) => {
                assert_eq!(mode, loose);
                assert_eq!(path, key_path);
            }
            other => panic!("mode {loose:o}: {other:?}"),
        }
    }
    // Malformed seeds, with no key material in the message.
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    for bad in [
        "",
        "zz",
        &"A".repeat(64),
        &format!("{}\n\n", "a".repeat(64)),
        &"a".repeat(66),
    ] {
        std::fs::write(&key_path, bad).expect("write");
        let err = PrivateKey::load(&key_path).expect_err("malformed");
        assert!(
            matches!(err, KeyError::MalformedPrivateKey { .. }),
            "{bad:?}: {err:?}"
        );
        assert!(!err.to_string().contains(bad.trim()) || bad.trim().is_empty());
    }
    // A .pub whose keyid does not match its key.
    let tampered = text.replacen(&file.keyid[..4], "0000", 1);
    std::fs::write(&pub_path, tampered).expect("write");
    assert!(matches!(
        PublicKey::load(&pub_path),
        Err(KeyError::KeyidMismatch { .. })
    ));
}

#[test]
fn keyring_round_trip_and_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("keyring.json");
    let a = PrivateKey::from_seed(&hex32(RFC8032[0].0));
    let b = PrivateKey::from_seed(&hex32(RFC8032[1].0));
    let from: Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
    let until: Timestamp = "2027-01-01T00:00:00Z".parse().expect("time");
    let mut ring = Keyring::default();
    ring.add(TrustedKey {
        key: a.public().clone(),
        valid_from: from,
        valid_until: None,
    })
    .expect("adds");
    ring.add(TrustedKey {
        key: b.public().clone(),
        valid_from: from,
        valid_until: Some(until),
    })
    .expect("adds");
    assert!(matches!(
        ring.add(TrustedKey {
            key: a.public().clone(),
            valid_from: from,
            valid_until: None,
        }),
        Err(KeyError::DuplicateKey { .. })
    ));
    assert!(matches!(
        ring.add(TrustedKey {
            key: PrivateKey::from_seed(&hex32(RFC8032[2].0)).public().clone(),
            valid_from: until,
            valid_until: Some(from),
        }),
        Err(KeyError::BadValidity { .. })
    ));
    ring.save(&path).expect("saves");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.starts_with(r#"[{"keyid":"74c181c7ad8a0855d4b55e44d2ba87aabdddb196832571f15f92fece332e4916","keytype":"ed25519","keyval":{"public":"d75a98"#));
    assert!(
        text.contains(r#""validFrom":"2026-01-01T00:00:00Z","validUntil":"2027-01-01T00:00:00Z""#)
    );
    let loaded = Keyring::load(&path).expect("loads");
    assert_eq!(loaded, ring);
    let b_entry = loaded.find(b.public().as_bytes()).expect("found by bytes");
    assert!(b_entry.is_valid_at("2026-06-01T00:00:00Z".parse().expect("time")));
    assert!(!b_entry.is_valid_at(until));
    assert!(!b_entry.is_valid_at("2025-12-31T23:59:59Z".parse().expect("time")));
    // A duplicate key in the file is refused.
    std::fs::write(&path, text.replacen("[{", "[{\"keyid\":\"x\",", 1)).expect("write");
    assert!(matches!(Keyring::load(&path), Err(KeyError::Json { .. })));
    // A keyid that is not the key's, named by index.
    std::fs::write(&path, text.replacen("74c181c7", "00000000", 1)).expect("write");
    match Keyring::load(&path) {
        Err(KeyError::KeyidMismatch { field, .. }) => assert_eq!(field, "[0].keyid"),
        other => panic!("{other:?}"),
    }
}

/// A leaked seed is found in every form it takes in a log or a response (raw, hex of
/// either case, base64 of either alphabet at any byte alignment inside a longer
/// stream), and another key's seed is not.
#[test]
fn a_seed_is_found_in_every_form_a_leak_takes() {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let seed = [0xfbu8; 32];
    let mut mixed = [0u8; 32];
    mixed
        .iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = (i as u8).wrapping_mul(37) ^ 0xa5);
    for seed in [seed, mixed] {
        let forms = PrivateKey::from_seed(&seed).seed_forms();
        let other = PrivateKey::from_seed(&[1; 32]).seed_forms();
        let mut leaks: Vec<Vec<u8>> = vec![
            [b"before ".as_slice(), &seed, b" after"].concat(),
            format!("key={}\n", hex::encode(seed)).into_bytes(),
            format!("KEY={}", hex::encode_upper(seed)).into_bytes(),
        ];
        for offset in 0..3 {
            let mut stream = vec![b'x'; offset];
            stream.extend_from_slice(&seed);
            stream.extend_from_slice(b"tail");
            leaks.push(format!("data: {}\n", STANDARD.encode(&stream)).into_bytes());
            leaks.push(URL_SAFE_NO_PAD.encode(&stream).into_bytes());
        }
        for leak in &leaks {
            assert!(forms.found_in(leak), "{}", String::from_utf8_lossy(leak));
            assert!(!other.found_in(leak), "{}", String::from_utf8_lossy(leak));
        }
        // Half a seed is no leak.
        assert!(!forms.found_in(&hex::encode(&seed[..16]).into_bytes()));
    }
}
