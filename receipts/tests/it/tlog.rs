//! The transparency log's formats and proofs against reference vectors: the RFC 6962
//! 8-leaf test tree of transparency-dev/merkle (and certificate-transparency-go) for roots,
//! inclusion and consistency proofs; the `PeterNeumann` example of Go's
//! `golang.org/x/mod/sumdb/note` documentation for signed notes; C2SP tlog-tiles paths
//! across tile boundaries; and property tests over random sizes and single flipped bits.
//!
//! Fixture-generation notes: every expected hash and signature below was recomputed
//! independently by `tests/python/tlog_vectors.py` (RFC 6962's recursive `MTH`, `PATH`
//! and `SUBPROOF` in Python, and the Go example key through `cryptography`'s Ed25519), and
//! matched the published values.

use std::cell::RefCell;
use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use proptest::prelude::*;
use receipts::keys::PrivateKey;
use receipts::tlog::checkpoint::{Checkpoint, CheckpointError};
use receipts::tlog::cosignature;
use receipts::tlog::merkle::{
    Hash, ProofError, empty_root, leaf_hash, prove_consistency, prove_inclusion, tree_root,
    verify_consistency, verify_inclusion,
};
use receipts::tlog::note::{self, Note, NoteError, NoteVerifier, SignatureType, key_id};
use receipts::tlog::tiles::{
    TileError, TileId, TileSource, TiledTree, append_tiles, encode_bundle, read_bundle, read_tile,
    tiles_for_size,
};

fn h(s: &str) -> Hash {
    hex::decode(s).expect("hex").try_into().expect("32 bytes")
}

/// The 8 leaves of the RFC 6962 test tree.
fn leaves() -> Vec<Vec<u8>> {
    vec![
        vec![],
        vec![0x00],
        vec![0x10],
        vec![0x20, 0x21],
        vec![0x30, 0x31],
        vec![0x40, 0x41, 0x42, 0x43],
        (0x50..0x58).collect(),
        (0x60..0x70).collect(),
    ]
}

fn leaf_hashes() -> Vec<Hash> {
    leaves().iter().map(|l| leaf_hash(l)).collect()
}

/// Roots of the first 1..=8 leaves.
const ROOTS: [&str; 8] = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

/// (leaf index, tree size, proof).
const INCLUSION: &[(u64, u64, &[&str])] = &[
    (0, 1, &[]),
    (
        0,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        &[
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        3,
        &["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
    ),
    (
        1,
        5,
        &[
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
];

/// (old size, new size, proof).
const CONSISTENCY: &[(u64, u64, &[&str])] = &[
    (1, 1, &[]),
    (
        1,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        &[
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
];

fn hashes(list: &[&str]) -> Vec<Hash> {
    list.iter().map(|s| h(s)).collect()
}

#[test]
fn roots_of_the_reference_tree() {
    let l = leaf_hashes();
    assert_eq!(
        empty_root(),
        h("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    );
    assert_eq!(tree_root(&l[..], 0).unwrap(), empty_root());
    for (n, root) in ROOTS.iter().enumerate() {
        assert_eq!(
            tree_root(&l[..], n as u64 + 1).unwrap(),
            h(root),
            "size {}",
            n + 1
        );
    }
}

#[test]
fn inclusion_proofs_of_the_reference_tree() {
    let l = leaf_hashes();
    for &(index, size, proof) in INCLUSION {
        let proof = hashes(proof);
        assert_eq!(
            prove_inclusion(&l[..], index, size).unwrap(),
            proof,
            "{index}/{size}"
        );
        let root = h(ROOTS[size as usize - 1]);
        verify_inclusion(&l[index as usize], index, size, &proof, &root).unwrap();
    }
}

#[test]
fn consistency_proofs_of_the_reference_tree() {
    let l = leaf_hashes();
    for &(old, new, proof) in CONSISTENCY {
        let proof = hashes(proof);
        assert_eq!(
            prove_consistency(&l[..], old, new).unwrap(),
            proof,
            "{old}→{new}"
        );
        let (a, b) = (h(ROOTS[old as usize - 1]), h(ROOTS[new as usize - 1]));
        verify_consistency(old, new, &proof, &a, &b).unwrap();
    }
}

#[test]
fn bad_proofs_are_named_failures() {
    let l = leaf_hashes();
    let root8 = h(ROOTS[7]);
    let proof = hashes(INCLUSION[1].2);
    assert_eq!(
        verify_inclusion(&l[0], 8, 8, &proof, &root8),
        Err(ProofError::IndexBeyondSize { index: 8, size: 8 })
    );
    assert_eq!(
        prove_inclusion(&l[..], 3, 3),
        Err(ProofError::IndexBeyondSize { index: 3, size: 3 })
    );
    assert_eq!(
        verify_inclusion(&l[0], 0, 8, &proof[..2], &root8),
        Err(ProofError::WrongLength {
            got: 2,
            expected: 3
        })
    );
    // The right hashes for the wrong leaf.
    assert_eq!(
        verify_inclusion(&l[1], 0, 8, &proof, &root8),
        Err(ProofError::RootMismatch)
    );
    let cons = hashes(CONSISTENCY[2].2);
    assert_eq!(
        verify_consistency(8, 6, &cons, &root8, &h(ROOTS[5])),
        Err(ProofError::OldLargerThanNew { old: 8, new: 6 })
    );
    let mut long = cons.clone();
    long.push(root8);
    assert_eq!(
        verify_consistency(6, 8, &long, &h(ROOTS[5]), &root8),
        Err(ProofError::WrongLength {
            got: 4,
            expected: 3
        })
    );
    // A truncated log re-rooted: the old root of size 6 does not extend to another root.
    assert_eq!(
        verify_consistency(6, 8, &cons, &h(ROOTS[5]), &h(ROOTS[6])),
        Err(ProofError::RootMismatch)
    );
    assert_eq!(
        verify_consistency(5, 5, &[], &h(ROOTS[4]), &h(ROOTS[5])),
        Err(ProofError::RootMismatch)
    );
    assert_eq!(
        verify_consistency(0, 5, &[root8], &empty_root(), &h(ROOTS[4])),
        Err(ProofError::WrongLength {
            got: 1,
            expected: 0
        })
    );
}

fn random_leaves(n: u64) -> Vec<Hash> {
    (0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect()
}

fn flip(h: &mut Hash, bit: usize) {
    h[bit / 8 % 32] ^= 1 << (bit % 8);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn inclusion_verifies_and_any_flipped_bit_fails(size in 1u64..700, index_seed: u64, bit: usize) {
        let l = random_leaves(size);
        let index = index_seed % size;
        let root = tree_root(&l[..], size).unwrap();
        let proof = prove_inclusion(&l[..], index, size).unwrap();
        prop_assert_eq!(verify_inclusion(&l[index as usize], index, size, &proof, &root), Ok(()));
        // One bit flipped anywhere in leaf, proof or root.
        let (mut leaf, mut proof, mut root) = (l[index as usize], proof, root);
        let target = bit % (256 * (proof.len() + 2));
        match target / 256 {
            0 => flip(&mut leaf, target),
            1 => flip(&mut root, target),
            k => flip(&mut proof[k - 2], target),
        }
        prop_assert!(verify_inclusion(&leaf, index, size, &proof, &root).is_err());
    }

    #[test]
    fn consistency_verifies_and_any_flipped_bit_fails(new in 1u64..700, old_seed: u64, bit: usize) {
        let l = random_leaves(new);
        let old = 1 + old_seed % new;
        let (a, b) = (tree_root(&l[..], old).unwrap(), tree_root(&l[..], new).unwrap());
        let proof = prove_consistency(&l[..], old, new).unwrap();
        prop_assert_eq!(verify_consistency(old, new, &proof, &a, &b), Ok(()));
        let (mut a, mut b, mut proof) = (a, b, proof);
        let target = bit % (256 * (proof.len() + 2));
        match target / 256 {
            0 => flip(&mut a, target),
            1 => flip(&mut b, target),
            k => flip(&mut proof[k - 2], target),
        }
        prop_assert!(verify_consistency(old, new, &proof, &a, &b).is_err());
    }
}

/// An in-memory tile store that counts reads.
#[derive(Default)]
struct MemTiles {
    files: HashMap<String, Vec<u8>>,
    reads: RefCell<u64>,
}

impl TileSource for MemTiles {
    fn read(&self, path: &str) -> Result<Vec<u8>, TileError> {
        *self.reads.borrow_mut() += 1;
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| TileError::Unavailable {
                path: path.to_owned(),
                reason: "absent".to_owned(),
            })
    }
}

#[test]
fn tile_paths_follow_tlog_tiles() {
    let t = |level, index, width| TileId {
        level,
        index,
        width,
    };
    assert_eq!(t(0, 0, 256).path(), "tile/0/000");
    assert_eq!(t(0, 999, 256).path(), "tile/0/999");
    assert_eq!(t(0, 1000, 256).path(), "tile/0/x001/000");
    assert_eq!(t(1, 1234067, 256).path(), "tile/1/x001/x234/067");
    assert_eq!(t(0, 1234067, 1).path(), "tile/0/x001/x234/067.p/1");
    assert_eq!(t(2, 5, 255).path(), "tile/2/005.p/255");
    assert_eq!(
        t(0, 1234067, 256).entries_path(),
        "tile/entries/x001/x234/067"
    );
    assert_eq!(t(0, 3, 17).entries_path(), "tile/entries/003.p/17");
}

#[test]
fn tiles_of_sizes_across_tile_boundaries() {
    let paths = |size| -> Vec<String> { tiles_for_size(size).iter().map(TileId::path).collect() };
    assert!(paths(0).is_empty());
    assert_eq!(paths(1), ["tile/0/000.p/1"]);
    assert_eq!(paths(255), ["tile/0/000.p/255"]);
    assert_eq!(paths(256), ["tile/0/000", "tile/1/000.p/1"]);
    assert_eq!(
        paths(257),
        ["tile/0/000", "tile/0/001.p/1", "tile/1/000.p/1"]
    );
    let big = paths(65_536 + 256 + 3);
    assert_eq!(big.len(), 256 + 2 + 2 + 1);
    assert_eq!(
        big[254..],
        [
            "tile/0/254",
            "tile/0/255",
            "tile/0/256",
            "tile/0/257.p/3",
            "tile/1/000",
            "tile/1/001.p/1",
            "tile/2/000.p/1",
        ]
    );
}

#[test]
fn tiles_built_by_appends_give_the_same_tree() {
    let l = random_leaves(66_000);
    let mut store = MemTiles::default();
    let mut size = 0u64;
    // Appends of uneven sizes that cross tile boundaries at levels 0, 1 and 2.
    for step in [1u64, 254, 1, 1, 300, 65_000, 443] {
        let new = size + step;
        for (tile, bytes) in append_tiles(&store, size, &l[size as usize..new as usize]).unwrap() {
            store.files.insert(tile.path(), bytes);
        }
        size = new;
        let tiled = TiledTree {
            source: &store,
            size,
        };
        assert_eq!(
            tree_root(&tiled, size).unwrap(),
            tree_root(&l[..], size).unwrap()
        );
    }
    assert_eq!(size, 66_000);
    let tiled = TiledTree {
        source: &store,
        size,
    };
    for (index, old) in [
        (0u64, 1u64),
        (255, 256),
        (256, 257),
        (65_535, 65_536),
        (65_999, 557),
    ] {
        assert_eq!(
            prove_inclusion(&tiled, index, size).unwrap(),
            prove_inclusion(&l[..], index, size).unwrap()
        );
        assert_eq!(
            prove_consistency(&tiled, old, size).unwrap(),
            prove_consistency(&l[..], old, size).unwrap()
        );
    }
    // Each level's partial tile: 66000 = 257·256 + 208 leaves, 257 = 256 + 1 level-1 nodes.
    assert_eq!(
        tiles_for_size(size)[256..]
            .iter()
            .map(TileId::path)
            .collect::<Vec<_>>(),
        [
            "tile/0/256",
            "tile/0/257.p/208",
            "tile/1/000",
            "tile/1/001.p/1",
            "tile/2/000.p/1"
        ]
    );
    // A truncated tile is a named failure, also through proofs.
    let edge = TileId {
        level: 0,
        index: 257,
        width: 208,
    };
    store.files.get_mut(&edge.path()).unwrap().pop();
    assert_eq!(
        read_tile(&store, edge),
        Err(TileError::WrongLength {
            path: "tile/0/257.p/208".to_owned(),
            bytes: 208 * 32 - 1,
            expected: 208 * 32
        })
    );
    let damaged = TiledTree {
        source: &store,
        size,
    };
    match prove_inclusion(&damaged, 65_999, size) {
        Err(ProofError::NodeUnavailable { reason, .. }) => assert_eq!(
            reason,
            "tile `tile/0/257.p/208` is 6655 bytes, expected 6656"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_append_reads_only_the_partial_tiles() {
    let l = random_leaves(512);
    let mut store = MemTiles::default();
    for (tile, bytes) in append_tiles(&store, 0, &l[..299]).unwrap() {
        store.files.insert(tile.path(), bytes);
    }
    *store.reads.borrow_mut() = 0;
    let written = append_tiles(&store, 299, &l[299..]).unwrap();
    let reads = *store.reads.borrow();
    for (tile, bytes) in &written {
        store.files.insert(tile.path(), bytes.clone());
    }
    let tiled = TiledTree {
        source: &store,
        size: 512,
    };
    assert_eq!(
        tree_root(&tiled, 512).unwrap(),
        tree_root(&l[..], 512).unwrap()
    );
    // The level-0 partial tile 001.p/43 and the level-1 partial tile 000.p/1, which
    // tile 001's completion extends.
    assert_eq!(reads, 2);
    let paths: Vec<String> = written.iter().map(|(t, _)| t.path()).collect();
    assert_eq!(paths, ["tile/0/001", "tile/1/000.p/2"]);
}

#[test]
fn entry_bundles_round_trip_and_refuse_damage() {
    let entries: Vec<Vec<u8>> = vec![b"one".to_vec(), vec![], vec![7; 300]];
    let bytes = encode_bundle(&entries).unwrap();
    assert_eq!(&bytes[..5], [0, 3, b'o', b'n', b'e']);
    assert_eq!(bytes.len(), 2 + 3 + 2 + 2 + 300);
    let tile = TileId {
        level: 0,
        index: 0,
        width: 3,
    };
    let mut store = MemTiles::default();
    store.files.insert(tile.entries_path(), bytes.clone());
    assert_eq!(read_bundle(&store, tile).unwrap(), entries);
    let bad = Err(TileError::BadBundle {
        path: "tile/entries/000.p/3".to_owned(),
        expected: 3,
    });
    store
        .files
        .insert(tile.entries_path(), bytes[..bytes.len() - 1].to_vec());
    assert_eq!(read_bundle(&store, tile), bad);
    let mut trailing = bytes.clone();
    trailing.push(0);
    store.files.insert(tile.entries_path(), trailing);
    assert_eq!(read_bundle(&store, tile), bad);
    assert_eq!(
        encode_bundle(&[vec![0u8; 65_536]]),
        Err(TileError::EntryTooLarge { bytes: 65_536 })
    );
}

/// Go's `golang.org/x/mod/sumdb/note` documentation example.
const GO_VKEY: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const GO_SKEY: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const GO_TEXT: &str = "If you think cryptography is the answer to your problem,\n\
                       then you don't know what your problem is.\n";
const GO_NOTE: &str = "If you think cryptography is the answer to your problem,\n\
                       then you don't know what your problem is.\n\
                       \n\
                       \u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";

fn go_private_key() -> PrivateKey {
    let b64 = GO_SKEY.splitn(5, '+').nth(4).unwrap();
    let raw = STANDARD.decode(b64).unwrap();
    assert_eq!(raw[0], 0x01);
    PrivateKey::from_seed(&raw[1..].try_into().unwrap())
}

#[test]
fn go_note_example_parses_and_verifies() {
    let verifier = NoteVerifier::parse(GO_VKEY).unwrap();
    assert_eq!(verifier.name(), "PeterNeumann");
    assert_eq!(verifier.key_id(), 0xc74f20a3);
    assert_eq!(verifier.kind(), SignatureType::Ed25519);
    assert_eq!(verifier.to_vkey(), GO_VKEY);
    let key = go_private_key();
    assert_eq!(key.public(), verifier.key());
    assert_eq!(
        key_id(
            "PeterNeumann",
            SignatureType::Ed25519,
            key.public().as_bytes()
        ),
        0xc74f20a3
    );

    let note = Note::parse(GO_NOTE.as_bytes()).unwrap();
    assert_eq!(note.text, GO_TEXT);
    assert_eq!(note.signatures.len(), 1);
    assert_eq!(note.signatures[0].key_id, 0xc74f20a3);
    note.verify(&verifier).unwrap();
    assert_eq!(note.to_bytes(), GO_NOTE.as_bytes());
    // Ed25519 is deterministic: our signer reproduces Go's note byte for byte.
    assert_eq!(note::sign(GO_TEXT, "PeterNeumann", &key).unwrap(), note);
}

#[test]
fn bad_notes_and_keys_are_named_failures() {
    let verifier = NoteVerifier::parse(GO_VKEY).unwrap();
    // One changed character of the text.
    let forged = GO_NOTE.replacen("cryptography", "cryptographY", 1);
    assert_eq!(
        Note::parse(forged.as_bytes()).unwrap().verify(&verifier),
        Err(NoteError::BadSignature {
            name: "PeterNeumann".to_owned(),
            key_id: 0xc74f20a3
        })
    );
    let other = NoteVerifier::new(
        "PeterNeumann",
        SignatureType::Ed25519,
        PrivateKey::from_seed(&[9; 32]).public().clone(),
    )
    .unwrap();
    assert_eq!(
        Note::parse(GO_NOTE.as_bytes()).unwrap().verify(&other),
        Err(NoteError::NotSignedBy {
            name: "PeterNeumann".to_owned(),
            key_id: other.key_id()
        })
    );
    assert!(matches!(
        NoteVerifier::parse("PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"),
        Err(NoteError::KeyIdMismatch {
            claimed: 0xc74f20a4,
            computed: 0xc74f20a3,
            ..
        })
    ));
    assert_eq!(
        NoteVerifier::parse("PeterNeumann+c74f20a3+AhpcrQ=="),
        Err(NoteError::BadVerifierKey {
            reason: "unknown signature type"
        })
    );
    let malformed = |s: &str| match Note::parse(s.as_bytes()) {
        Err(NoteError::Malformed { reason }) => reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(malformed("text\n"), "no blank line before the signatures");
    assert_eq!(
        malformed("text\n\n- PeterNeumann AAAAAAA=\n"),
        "signature line does not start with an em dash and a space"
    );
    assert_eq!(
        malformed("te\u{7}xt\n\n\u{2014} a AAAAAAA=\n"),
        "text is empty, has a blank line or a control character"
    );
    assert_eq!(
        malformed("text\n\n\u{2014} a AAAA\n"),
        "signature is shorter than a key id and one byte"
    );
    assert_eq!(
        malformed("text\n\n\u{2014} a AAAAAAA=\n\u{2014} a AAAAAAA="),
        "signatures do not end in a newline"
    );
    assert!(matches!(
        Note::parse(&vec![b'a'; 70_000]),
        Err(NoteError::TooLarge { bytes: 70_000, .. })
    ));
}

fn log_key() -> (PrivateKey, NoteVerifier) {
    let key = PrivateKey::from_seed(&[1; 32]);
    let verifier = NoteVerifier::new(
        "referee.example/log",
        SignatureType::Ed25519,
        key.public().clone(),
    )
    .unwrap();
    (key, verifier)
}

#[test]
fn checkpoints_round_trip_and_refuse_the_wrong_log() {
    let (key, log) = log_key();
    let cp = Checkpoint {
        origin: "referee.example/log".to_owned(),
        size: 8,
        root: h(ROOTS[7]),
        extensions: vec![],
    };
    assert_eq!(
        cp.to_text(),
        "referee.example/log\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=\n"
    );
    let bytes = cp.sign(&key).unwrap().to_bytes();
    let (opened, note) = Checkpoint::open(&bytes, &log).unwrap();
    assert_eq!(opened, cp);
    assert_eq!(note.signatures.len(), 1);

    let other_origin = NoteVerifier::new(
        "other.example/log",
        SignatureType::Ed25519,
        key.public().clone(),
    )
    .unwrap();
    assert_eq!(
        Checkpoint::open(&bytes, &other_origin),
        Err(CheckpointError::WrongOrigin {
            expected: "other.example/log".to_owned(),
            got: "referee.example/log".to_owned()
        })
    );
    let resized = String::from_utf8(bytes.clone())
        .unwrap()
        .replacen("\n8\n", "\n9\n", 1);
    assert!(matches!(
        Checkpoint::open(resized.as_bytes(), &log),
        Err(CheckpointError::Note(NoteError::BadSignature { .. }))
    ));
    let malformed = |t: &str| match Checkpoint::parse(t) {
        Err(CheckpointError::Malformed { reason }) => reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        malformed("o\n08\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=\n"),
        "size is not a decimal number without leading zeros"
    );
    assert_eq!(
        malformed("o\n8\nXcnaeacGWamtVZy3Ad7Zoqudgjqt\n"),
        "root hash is not base64 of 32 bytes"
    );
    assert_eq!(malformed("o\n8\n"), "fewer than three lines");
    let with_ext =
        Checkpoint::parse("o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\next one\n").unwrap();
    assert_eq!(with_ext.root, empty_root());
    assert_eq!(with_ext.extensions, ["ext one"]);
}

#[test]
fn cosignatures_verify_and_carry_the_witness_time() {
    let (key, log) = log_key();
    let cp = Checkpoint {
        origin: "referee.example/log".to_owned(),
        size: 3,
        root: h(ROOTS[2]),
        extensions: vec![],
    };
    let mut note = cp.sign(&key).unwrap();
    let witness_key = PrivateKey::from_seed(&[2; 32]);
    let witness = NoteVerifier::new(
        "witness.example",
        SignatureType::Cosignature,
        witness_key.public().clone(),
    )
    .unwrap();
    assert_eq!(
        cosignature::signed_message(&note.text, 1_700_000_000),
        format!("cosignature/v1\ntime 1700000000\n{}", cp.to_text())
    );
    let line =
        cosignature::cosign(&note.text, "witness.example", &witness_key, 1_700_000_000).unwrap();
    assert_eq!(line.bytes.len(), 72);
    assert_eq!(&line.bytes[..8], 1_700_000_000u64.to_be_bytes());
    note.signatures.push(line);
    let reparsed = Checkpoint::open(&note.to_bytes(), &log).unwrap().1;
    assert_eq!(cosignature::verify(&reparsed, &witness), Ok(1_700_000_000));
    // The log key's note signature does not pass as a cosignature, and vice versa.
    assert!(matches!(
        cosignature::verify(&reparsed, &log),
        Err(NoteError::NotSignedBy { .. })
    ));
    assert!(matches!(
        reparsed.verify(&witness),
        Err(NoteError::NotSignedBy { .. })
    ));
    // A moved timestamp breaks the signature.
    let mut moved = reparsed.clone();
    moved.signatures[1].bytes[7] ^= 1;
    assert!(matches!(
        cosignature::verify(&moved, &witness),
        Err(NoteError::BadSignature { .. })
    ));
}

fn keyring_from(json: &str) -> Result<receipts::keys::Keyring, receipts::keys::KeyError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keyring.json");
    std::fs::write(&path, json).unwrap();
    receipts::keys::Keyring::load(&path)
}

fn keyring_entry(seed: u8, extra: &str) -> String {
    let public = PrivateKey::from_seed(&[seed; 32]).public().to_file();
    format!(
        r#"{{"keyid":"{}","keytype":"ed25519","keyval":{{"public":"{}"}},"scheme":"ed25519","validFrom":"2026-01-01T00:00:00Z"{extra}}}"#,
        public.keyid, public.keyval.public
    )
}

#[test]
fn keyring_keys_count_only_in_their_role() {
    use receipts::keys::{KeyError, KeyRole};
    // A keyring written before roles existed: every key an evaluator key.
    let old = keyring_from(&format!("[{}]", keyring_entry(1, ""))).unwrap();
    assert_eq!(old.keys().len(), 1);
    assert!(old.role_keys().is_empty());

    let log_public = *PrivateKey::from_seed(&[2; 32]).public().as_bytes();
    let json = format!(
        "[{},{},{}]",
        keyring_entry(1, ""),
        keyring_entry(2, r#","role":"log","origin":"referee.example/log""#),
        keyring_entry(3, r#","role":"witness","origin":"witness.example""#)
    );
    let ring = keyring_from(&json).unwrap();
    assert_eq!(ring.keys().len(), 1);
    assert!(
        ring.find(&log_public).is_none(),
        "a log key is no evaluator key"
    );
    let log = ring
        .find_role_key(KeyRole::Log, "referee.example/log", &log_public)
        .unwrap();
    assert_eq!(log.origin, "referee.example/log");
    assert!(
        ring.find_role_key(KeyRole::Witness, "referee.example/log", &log_public)
            .is_none()
    );
    assert!(
        ring.find_role_key(KeyRole::Log, "other.example/log", &log_public)
            .is_none()
    );
    // Saved and loaded, the roles stay.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.json");
    ring.save(&path).unwrap();
    assert_eq!(receipts::keys::Keyring::load(&path).unwrap(), ring);

    let bad = |extra: &str| match keyring_from(&format!("[{}]", keyring_entry(2, extra))) {
        Err(KeyError::BadRole { problem, .. }) => problem,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        bad(r#","role":"log""#),
        "a log or witness key needs an origin"
    );
    assert_eq!(bad(r#","origin":"x""#), "an evaluator key has no origin");
    assert_eq!(
        bad(r#","role":"witness","origin":"has space""#),
        "origin is empty or holds whitespace or `+`"
    );
    // One key in two roles is refused.
    let twice = format!(
        "[{},{}]",
        keyring_entry(2, ""),
        keyring_entry(2, r#","role":"log","origin":"referee.example/log""#)
    );
    assert!(matches!(
        keyring_from(&twice),
        Err(KeyError::DuplicateKey { .. })
    ));
}

/// C2SP tlog-proof: the spec's layout (header, `extra`, `index`, hashes, empty line,
/// checkpoint), two proofs in one file, and each damage a named failure.
#[test]
fn tlog_proofs_round_trip_and_refuse_damage() {
    use receipts::tlog::proof::{TlogProof, TlogProofError, round_proof_path};
    let (key, log) = log_key();
    let leaves = leaf_hashes();
    let checkpoint = Checkpoint {
        origin: log.name().to_owned(),
        size: 8,
        root: tree_root(&leaves[..], 8).expect("root"),
        extensions: vec![],
    };
    let note = checkpoint.sign(&key).expect("sign").to_bytes();
    let proof = |index: u64, extra: &str| TlogProof {
        extra: Some(extra.as_bytes().to_vec()),
        index,
        proof: prove_inclusion(&leaves[..], index, 8).expect("prove"),
        checkpoint: note.clone(),
    };
    let (opened, receipt) = (proof(2, "round-opened"), proof(3, "receipt"));
    let text = String::from_utf8(opened.to_bytes()).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "c2sp.org/tlog-proof@v1",
            "extra cm91bmQtb3BlbmVk",
            "index 2",
            STANDARD.encode(leaves[3]).as_str()
        ]
    );
    assert_eq!(lines[6], "");
    assert_eq!(lines[7], log.name());
    let mut file = opened.to_bytes();
    file.extend(receipt.to_bytes());
    let parsed = TlogProof::parse_all(&file).expect("parses");
    assert_eq!(parsed, vec![opened.clone(), receipt]);
    assert_eq!(
        parsed[0].verify(&leaves[2], &log).expect("verifies"),
        checkpoint
    );
    // The wrong leaf, a truncated proof, a flipped hash, an index beyond the size.
    assert!(matches!(
        parsed[0].verify(&leaves[3], &log),
        Err(TlogProofError::Inclusion {
            index: 2,
            size: 8,
            source: ProofError::RootMismatch
        })
    ));
    let mut short = opened.clone();
    short.proof.pop();
    assert!(matches!(
        short.verify(&leaves[2], &log),
        Err(TlogProofError::Inclusion {
            source: ProofError::WrongLength {
                got: 2,
                expected: 3
            },
            ..
        })
    ));
    let mut beyond = opened.clone();
    beyond.index = 8;
    assert!(matches!(
        beyond.verify(&leaves[2], &log),
        Err(TlogProofError::Inclusion {
            source: ProofError::IndexBeyondSize { index: 8, size: 8 },
            ..
        })
    ));
    // A checkpoint of another key.
    let other = PrivateKey::from_seed(&[99; 32]);
    let mut forged = opened.clone();
    forged.checkpoint = checkpoint.sign(&other).expect("sign").to_bytes();
    assert!(matches!(
        forged.verify(&leaves[2], &log),
        Err(TlogProofError::Checkpoint(CheckpointError::Note(
            NoteError::NotSignedBy { .. }
        )))
    ));
    for (bytes, reason) in [
        (
            &b"c2sp.org/tlog-proof@v2\nindex 0\n\n"[..],
            "the first line is not `c2sp.org/tlog-proof@v1`",
        ),
        (
            b"c2sp.org/tlog-proof@v1\nindex 01\n\n",
            "no `index <n>` line with a decimal index",
        ),
        (
            b"c2sp.org/tlog-proof@v1\nindex 1\nAAAA\n\n",
            "a proof line is not base64 of 32 bytes",
        ),
        (
            b"c2sp.org/tlog-proof@v1\nindex 1\n",
            "no empty line before the checkpoint",
        ),
    ] {
        assert_eq!(
            TlogProof::parse(bytes),
            Err(TlogProofError::Malformed { reason }),
            "{reason}"
        );
    }
    assert_eq!(
        round_proof_path(std::path::Path::new("data/demo/rounds/12")),
        std::path::Path::new("data/demo/rounds/12.proof")
    );
}
