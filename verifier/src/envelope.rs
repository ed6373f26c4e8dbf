//! Bundle verification, checks 1–6 of content/receipts.md (§Verification) in that order:
//! the envelope, its signatures, the Statement and the files against their subjects. The
//! round's own checks (its round-opened statement, seeds, recomputed numbers) build on
//! these in the `verifier` crate, which records into the same [`VerifyReport`]. Every
//! check is run and reported, not only the first failure: a check that cannot run
//! because an earlier one failed is reported as failed with [`FailureReason::NotRun`].
//!
//! referee is strict about its own bundles (content/receipts.md §Keys): the envelope file must be
//! canonical JSON (`envelope.canonical`), base64 must be standard and padded
//! (`envelope.base64`), and each signature's keyid must equal the keyid of the trusted key
//! that verified it (`signature.keyid`: a signature valid under a trusted key whose keyid
//! hint differs is refused with [`FailureReason::KeyidHintDiffers`] and does not count).
//! So a one-byte change to any file of a bundle, the envelope included, fails a check that
//! names the file.
//!
//! Envelopes of other tools ([`VerifyOptions::foreign`], `referee verify --foreign`) are
//! read as the DSSE spec allows (content/receipts.md §Envelope: the keyid is a hint only for
//! envelopes of other tools): any envelope JSON that parses strictly is accepted (no
//! `envelope.canonical` check), base64 may be URL-safe or unpadded (still refused: wrong
//! padding, non-canonical trailing bits, mixed alphabets), and a signature counts under
//! whichever trusted key verifies it, whatever its keyid hint (no `signature.keyid`
//! check). Everything else stays as strict: the strict JSON parse, `payloadType`, 64-byte
//! `verify_strict` signatures, key validity, the threshold, the Statement and the files.
//!
//! Payloads: a payload whose `predicateType` is one of referee's own
//! ([`statement::is_referee_predicate_type`]: round v1/v2, round-opened v1) must be
//! byte-identical to its RFC 8785 canonical form (`statement.canonical`, failing with
//! [`FailureReason::NonCanonicalPayload`]), with or without `foreign`: referee signs only
//! canonical payloads, so another form of one of its predicates was not made by it. A
//! payload of any other type is not required to be canonical, and gets no such check.
//!
//! Key validity: a signature counts only if its key is valid at [`VerifyOptions::at`]
//! (`validFrom ≤ at < validUntil`), which defaults to the time of verification. To check
//! an old bundle signed by a since-retired key, verify "as of" a time inside that key's
//! window (`referee verify --at`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use receipts::bundle::{self, ENVELOPE_FILE, EntryKind, MAX_ENVELOPE_BYTES};
use receipts::canonical::{self, CanonicalError, StrictJsonError};
use receipts::dsse::{self, EnvelopeError, IN_TOTO_PAYLOAD_TYPE, RawEnvelope, SIGNATURE_LENGTH};
use receipts::fsutil::{self, OpenRegularError};
use receipts::keys::Keyring;
use receipts::model::{ROUND_PREDICATE_TYPE, Sha256Hex, Timestamp};
use receipts::statement::{self, PredicateText, STATEMENT_TYPE, Statement, Subject};

use crate::report::{CheckName, FailureReason, VerifyReport};

/// How to verify.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyOptions {
    /// The instant key validity windows are checked at.
    pub at: Timestamp,
    /// Distinct trusted keys that must have signed (at least 1).
    pub threshold: usize,
    /// Largest envelope file accepted, bytes.
    pub max_envelope_bytes: usize,
    /// When set, `predicateType` must equal it; otherwise any non-empty type is accepted
    /// and only referee's own types get a schema check.
    pub expected_predicate_type: Option<String>,
    /// Read the envelope as another tool's (`referee verify --foreign`; default `false`).
    /// content/receipts.md rules: the keyid is a hint only for envelopes of other tools. When set,
    /// a signature counts under whichever trusted key verifies it even if its keyid hint
    /// differs (no `signature.keyid` check is recorded), the envelope file need not be
    /// canonical JSON (no `envelope.canonical` check), and base64 fields may be URL-safe
    /// or unpadded (`envelope.base64` then only requires a strict decode: wrong padding
    /// and non-canonical trailing bits are still refused). When unset (referee's own
    /// bundles), each of those is a failed check. Payloads of referee's own predicate
    /// types must be canonical either way.
    pub foreign: bool,
}

impl VerifyOptions {
    /// Threshold 1, the default size limit, any predicate type, key validity at `at`,
    /// referee's own strict form (`foreign: false`).
    pub fn at(at: Timestamp) -> Self {
        Self {
            at,
            threshold: 1,
            max_envelope_bytes: MAX_ENVELOPE_BYTES,
            expected_predicate_type: None,
            foreign: false,
        }
    }
}

impl Default for VerifyOptions {
    /// [`VerifyOptions::at`] now.
    fn default() -> Self {
        Self::at(Timestamp::now())
    }
}

/// Checks 1–6 of content/receipts.md on the bundle in `dir` against `keyring`: the
/// envelope, signatures and Statement of `receipt.dsse.json` (1–5), then every file
/// against its subject (6); every check reported. Returns the report and, when the
/// Statement's shape was right, the Statement for the round checks of the `verifier`
/// crate (which is what `referee verify` runs). Never fails: I/O problems are failed
/// checks naming the file.
pub fn verify_envelope_and_files(
    dir: &Path,
    keyring: &Keyring,
    options: &VerifyOptions,
) -> (VerifyReport, Option<Statement<PredicateText>>) {
    let mut report = VerifyReport::new(dir);
    // 1–5. The envelope and its Statement (on failure it reports what could not run).
    let Some(statement) = verify_envelope(dir, ENVELOPE_FILE, keyring, options, &mut report) else {
        return (report, None);
    };
    // 6. Subjects against the files.
    check_subjects(&mut report, dir, &statement);
    (report, Some(statement))
}

/// Steps 1–5 on the envelope `file` of the bundle in `dir`, recorded into `report` with
/// reasons naming `file`. Returns the Statement when its shape is right; `None` when a
/// step could not go on (the later checks are then recorded as not run). The verifier
/// runs it on a round's round-opened statement too.
pub fn verify_envelope(
    dir: &Path,
    file: &str,
    keyring: &Keyring,
    options: &VerifyOptions,
    report: &mut VerifyReport,
) -> Option<Statement<PredicateText>> {
    const AFTER_PARSE: &[CheckName] = &[
        CheckName::PayloadType,
        CheckName::Base64,
        CheckName::Signatures,
        CheckName::StatementParse,
        CheckName::Subject,
    ];

    // 1. Parse the envelope strictly; referee's own envelopes are also canonical (another
    // tool's need not be).
    let Some((raw, canonical)) = parse_envelope(dir, file, options, report) else {
        report.not_run(AFTER_PARSE, CheckName::EnvelopeParse);
        return None;
    };
    if !options.foreign {
        report.record(
            CheckName::EnvelopeCanonical,
            None,
            canonical
                .then_some(())
                .ok_or_else(|| FailureReason::NonCanonicalEnvelope {
                    file: file.to_owned(),
                }),
        );
    }

    // 2. payloadType.
    report.record(
        CheckName::PayloadType,
        None,
        if raw.payload_type == IN_TOTO_PAYLOAD_TYPE {
            Ok(())
        } else {
            Err(FailureReason::PayloadTypeMismatch {
                file: file.to_owned(),
                found: raw.payload_type.clone(),
            })
        },
    );

    // 3. Decode payload and signatures.
    let payload = decode_field(report, file, "payload", &raw.payload, options.foreign);
    let mut signatures = Vec::new();
    for (index, signature) in raw.signatures.iter().enumerate() {
        let field = format!("signatures[{index}].sig");
        let Some(sig) = decode_field(report, file, &field, &signature.sig, options.foreign) else {
            continue;
        };
        let length_ok = report.record(
            CheckName::SignatureLength,
            Some(field.clone()),
            if sig.len() == SIGNATURE_LENGTH {
                Ok(())
            } else {
                Err(FailureReason::SignatureLength {
                    file: file.to_owned(),
                    field,
                    length: sig.len(),
                })
            },
        );
        if length_ok {
            signatures.push((index, sig));
        }
    }

    let Some(payload) = payload else {
        report.not_run(
            &[
                CheckName::Signatures,
                CheckName::StatementParse,
                CheckName::Subject,
            ],
            CheckName::Base64,
        );
        return None;
    };
    report.statement_digest = Some(Sha256Hex::digest(&payload));

    // 4. Signatures over the PAE, against the keyring.
    check_signatures(report, file, &raw, &payload, &signatures, keyring, options);

    // 5. The Statement, from the same decoded bytes.
    check_statement(report, file, &payload, options)
}

/// Step 1: read and strictly parse the envelope `file` (a regular file, never a symlink:
/// like every other bundle file; opened with [`fsutil::open_regular`], so the kind is
/// that of the file read); records the check. Returns the envelope and whether the file
/// is canonical JSON.
fn parse_envelope(
    dir: &Path,
    file_name: &str,
    options: &VerifyOptions,
    report: &mut VerifyReport,
) -> Option<(RawEnvelope, bool)> {
    let file = file_name.to_owned();
    let path = dir.join(file_name);
    let read = fsutil::open_regular(&path).and_then(|(handle, length)| {
        Ok(fsutil::read_to_limit(
            handle,
            length,
            options.max_envelope_bytes,
        )?)
    });
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(OpenRegularError::NotRegular(kind)) => {
            report.fail(
                CheckName::EnvelopeParse,
                None,
                FailureReason::NotRegularFile {
                    name: file,
                    kind: kind.as_str().to_owned(),
                },
            );
            return None;
        }
        Err(OpenRegularError::Io(e)) => {
            let message = e.to_string();
            report.fail(
                CheckName::EnvelopeParse,
                None,
                FailureReason::EnvelopeUnreadable { file, message },
            );
            return None;
        }
    };
    match RawEnvelope::parse(&bytes, options.max_envelope_bytes) {
        Ok((raw, canonical)) => {
            report.pass(CheckName::EnvelopeParse, None);
            Some((raw, canonical))
        }
        Err(EnvelopeError::Json(e)) => {
            report.fail(CheckName::EnvelopeParse, None, json_reason(file_name, e));
            None
        }
        Err(EnvelopeError::CaseFoldCollision { key, known }) => {
            report.fail(
                CheckName::EnvelopeParse,
                None,
                FailureReason::CaseFoldKey {
                    file,
                    key,
                    known: known.to_owned(),
                },
            );
            None
        }
        Err(other) => {
            report.fail(
                CheckName::EnvelopeParse,
                None,
                FailureReason::InvalidJson {
                    file,
                    message: other.to_string(),
                },
            );
            None
        }
    }
}

/// The typed reason of a strict-JSON failure in `file`.
fn json_reason(file: &str, error: StrictJsonError) -> FailureReason {
    let file = file.to_owned();
    match error {
        StrictJsonError::TooLarge { size, limit } => {
            FailureReason::EnvelopeTooLarge { file, size, limit }
        }
        StrictJsonError::InvalidUtf8 { offset } => FailureReason::InvalidUtf8 { file, offset },
        StrictJsonError::LoneSurrogate { offset } => FailureReason::LoneSurrogate { file, offset },
        StrictJsonError::DuplicateKey { path, key } => {
            FailureReason::DuplicateKey { file, path, key }
        }
        other @ (StrictJsonError::TooDeep { .. }
        | StrictJsonError::Syntax { .. }
        | StrictJsonError::Shape { .. }) => FailureReason::InvalidJson {
            file,
            message: other.to_string(),
        },
    }
}

/// Step 3 for one field: strict decode (standard or URL-safe alphabet, padding optional
/// but exactly right when present, zero trailing bits), then, unless `foreign`, referee's
/// form (standard, padded).
fn decode_field(
    report: &mut VerifyReport,
    file: &str,
    field: &str,
    text: &str,
    foreign: bool,
) -> Option<Vec<u8>> {
    match dsse::decode_base64(text) {
        Ok(bytes) => {
            let standard = foreign || is_standard_padded(text);
            report.record(
                CheckName::Base64,
                Some(field.to_owned()),
                standard
                    .then_some(())
                    .ok_or_else(|| FailureReason::NonStandardBase64 {
                        file: file.to_owned(),
                        field: field.to_owned(),
                    }),
            );
            Some(bytes)
        }
        Err(message) => {
            report.fail(
                CheckName::Base64,
                Some(field.to_owned()),
                FailureReason::BadBase64 {
                    file: file.to_owned(),
                    field: field.to_owned(),
                    message,
                },
            );
            None
        }
    }
}

/// Whether `text`, which [`dsse::decode_base64`] decoded, is referee's form: standard
/// alphabet, padded (what [`dsse::encode_base64`] of its bytes gives back), told from the
/// text alone. A decoded text with `-` or `_` was read in the URL-safe alphabet; one
/// without them was read in the standard one (the URL-safe alphabet adds nothing else,
/// and the standard one is tried first with the same padding and trailing-bit rules, so
/// the decoding is that text's only one). A standard text is its bytes' encoding exactly
/// when its length is a multiple of 4: with `=` the decoder demanded canonical padding,
/// without `=` none was due.
fn is_standard_padded(text: &str) -> bool {
    text.len().is_multiple_of(4) && !text.bytes().any(|b| b == b'-' || b == b'_')
}

/// Step 4: build the PAE once, `verify_strict` each 64-byte signature against every
/// keyring key (the key the keyid hint names first), count distinct keys valid at
/// `options.at` whose keyid was written correctly. A signature whose hint differs from the
/// keyid of the key it verifies under fails `signature.keyid`
/// ([`FailureReason::KeyidHintDiffers`]) and does not count, unless `options.foreign`:
/// then it counts and no keyid check is recorded.
fn check_signatures(
    report: &mut VerifyReport,
    file: &str,
    raw: &RawEnvelope,
    payload: &[u8],
    signatures: &[(usize, Vec<u8>)],
    keyring: &Keyring,
    options: &VerifyOptions,
) {
    if raw.signatures.is_empty() {
        report.fail(
            CheckName::Signatures,
            None,
            FailureReason::NoSignatures {
                file: file.to_owned(),
            },
        );
        return;
    }
    let message = dsse::pae(&raw.payload_type, payload);
    let mut counted: BTreeSet<[u8; 32]> = BTreeSet::new();
    let mut outside_validity = None;
    let mut hint_refused = false;
    for (index, sig) in signatures {
        // Hint first: try the key the keyid names, then every other key.
        let written = &raw.signatures[*index].keyid;
        let mut candidates: Vec<_> = keyring.keys().iter().collect();
        candidates.sort_by_key(|k| k.key.keyid() != written);
        let Some(trusted) = candidates
            .into_iter()
            .find(|k| dsse::signed_by(&message, sig, &k.key))
        else {
            continue;
        };
        if !options.foreign {
            let field = format!("signatures[{index}].keyid");
            let keyid_ok = report.record(
                CheckName::Keyid,
                Some(field.clone()),
                if written == trusted.key.keyid() {
                    Ok(())
                } else {
                    Err(FailureReason::KeyidHintDiffers {
                        file: file.to_owned(),
                        field,
                        keyid: trusted.key.keyid().to_owned(),
                        hint: written.clone(),
                    })
                },
            );
            if !keyid_ok {
                hint_refused = true;
                continue;
            }
        }
        if !trusted.is_valid_at(options.at) {
            outside_validity.get_or_insert_with(|| trusted.key.keyid().to_owned());
            continue;
        }
        if counted.insert(*trusted.key.as_bytes()) {
            report.signed_by.push(trusted.key.keyid().to_owned());
        }
    }
    let threshold = options.threshold.max(1);
    let result = if counted.len() >= threshold {
        Ok(())
    } else if let Some(keyid) = outside_validity {
        Err(FailureReason::KeyOutsideValidity {
            file: file.to_owned(),
            keyid,
            at: options.at,
        })
    } else if counted.is_empty() && !hint_refused {
        // (A signature refused only for its keyid hint did verify, so with one of those
        // "none verifies" would be wrong: that case is the threshold not met.)
        Err(FailureReason::NoTrustedSignature {
            file: file.to_owned(),
            signatures: raw.signatures.len(),
            keyids: raw
                .signatures
                .iter()
                .map(|s| keyid_hint(&s.keyid))
                .collect(),
        })
    } else {
        Err(FailureReason::ThresholdNotMet {
            file: file.to_owned(),
            counted: counted.len(),
            threshold,
        })
    };
    report.record(CheckName::Signatures, None, result);
}

/// Step 5: parse the payload strictly, check that a payload of one of referee's own
/// predicate types is canonical, then `_type`, `predicateType`, the v1 shape and the
/// predicate schema. Returns the Statement when its shape is right; otherwise records
/// the later checks as not run.
///
/// One strict scan of the payload answers the parse, its canonical form and its numbers;
/// the Statement is read from the text with its predicate kept as text, typed only by the
/// schema check. A payload the scan and that read do not settle (a number not an integer
/// below 2^53, a root that is not an object, a shape error) is parsed into a `Value`
/// as well, so each of its failures is named as the checks on that value name it.
fn check_statement(
    report: &mut VerifyReport,
    file: &str,
    payload: &[u8],
    options: &VerifyOptions,
) -> Option<Statement<PredicateText>> {
    let payload_label = format!("{file} payload");
    let parse_failed = |report: &mut VerifyReport, e: StrictJsonError| {
        report.fail(
            CheckName::StatementParse,
            None,
            json_reason(&payload_label, e),
        );
        report.not_run(
            &[
                CheckName::StatementType,
                CheckName::PredicateType,
                CheckName::StatementShape,
                CheckName::PredicateSchema,
                CheckName::Subject,
            ],
            CheckName::StatementParse,
        );
    };
    let scan = match canonical::scan_strict(payload, options.max_envelope_bytes) {
        Ok(scan) => scan,
        Err(e) => {
            parse_failed(report, e);
            return None;
        }
    };
    let typed = serde_json::from_slice::<Statement<PredicateText>>(payload);
    let known = ["_type", "subject", "predicateType", "predicate"];
    let fields = match (typed, scan.root_keys) {
        (Ok(statement), Some(mut keys)) if scan.integers => {
            // In the order of the parsed value's keys, which the rare path below reads.
            keys.sort_unstable();
            PayloadFields {
                collision: canonical::case_fold_collision(keys.iter().map(|k| &**k), &known),
                numbers: Ok(()),
                statement_type: statement.statement_type.clone(),
                predicate_type: statement.predicate_type.clone(),
                shape: Ok(statement),
            }
        }
        (typed, _) => match canonical::parse_strict(payload, options.max_envelope_bytes) {
            Ok(value) => PayloadFields::of_value(value, typed, &known),
            Err(e) => {
                parse_failed(report, e);
                return None;
            }
        },
    };
    let numbers = fields.numbers.map_err(|e| match e {
        CanonicalError::Float { path, value }
        | CanonicalError::NonFinite { path, value }
        | CanonicalError::IntegerOutOfRange { path, value } => FailureReason::NonIntegerNumber {
            file: file.to_owned(),
            path,
            value,
        },
        CanonicalError::Serialize { message } => FailureReason::InvalidJson {
            file: payload_label.clone(),
            message,
        },
    });
    let parsed = match fields.collision {
        Some((key, known)) => Err(FailureReason::CaseFoldKey {
            file: payload_label.clone(),
            key,
            known: known.to_owned(),
        }),
        None => numbers,
    };
    let parse_passed = report.record(CheckName::StatementParse, None, parsed);

    let predicate_type = fields.predicate_type;
    // referee signs its own predicates only as canonical bytes; another tool's need not be.
    if parse_passed && statement::is_referee_predicate_type(&predicate_type) {
        report.record(
            CheckName::StatementCanonical,
            None,
            scan.canonical
                .then_some(())
                .ok_or_else(|| FailureReason::NonCanonicalPayload {
                    file: file.to_owned(),
                    predicate_type: predicate_type.clone(),
                }),
        );
    }
    let statement_type = fields.statement_type;
    report.record(
        CheckName::StatementType,
        None,
        if statement_type == STATEMENT_TYPE {
            Ok(())
        } else {
            Err(FailureReason::WrongStatementType {
                file: file.to_owned(),
                found: statement_type,
            })
        },
    );
    let predicate_ok = match &options.expected_predicate_type {
        Some(expected) if *expected != predicate_type => Err(FailureReason::WrongPredicateType {
            file: file.to_owned(),
            found: predicate_type.clone(),
            expected: expected.clone(),
        }),
        None if predicate_type.is_empty() => Err(FailureReason::WrongPredicateType {
            file: file.to_owned(),
            found: predicate_type.clone(),
            expected: format!("a type URI, e.g. {ROUND_PREDICATE_TYPE}"),
        }),
        _ => Ok(()),
    };
    let predicate_type_passed = report.record(CheckName::PredicateType, None, predicate_ok);

    let statement = match fields.shape {
        Ok(statement) => {
            report.pass(CheckName::StatementShape, None);
            statement
        }
        Err(message) => {
            report.fail(
                CheckName::StatementShape,
                None,
                FailureReason::BadStatement {
                    file: file.to_owned(),
                    message,
                },
            );
            report.not_run(
                &[CheckName::PredicateSchema, CheckName::Subject],
                CheckName::StatementShape,
            );
            return None;
        }
    };
    let schema = statement::check_predicate_text(&statement.predicate_type, &statement.predicate)
        .map_err(|message| FailureReason::SchemaInvalid {
            file: file.to_owned(),
            predicate_type: statement.predicate_type.clone(),
            message,
        });
    if report.record(CheckName::PredicateSchema, None, schema) && predicate_type_passed {
        report.predicate_type = Some(statement.predicate_type.clone());
    }
    Some(statement)
}

/// What step 5 reads off a strictly parsed payload before recording its checks.
struct PayloadFields {
    /// A top-level key that case-folds to a known one, with that known key.
    collision: Option<(String, &'static str)>,
    /// Whether every number is an integer below 2^53 in magnitude.
    numbers: Result<(), CanonicalError>,
    /// `_type` when it is a string, else empty.
    statement_type: String,
    /// `predicateType` when it is a string, else empty.
    predicate_type: String,
    /// The Statement, or the message of its shape error.
    shape: Result<Statement<PredicateText>, String>,
}

impl PayloadFields {
    /// The fields of the payload parsed into `value`, `typed` being the Statement read
    /// from the same text. A shape error is named as `serde_json::from_value` names it
    /// (fields in the value's key order, no byte positions), as it always was.
    fn of_value(
        mut value: Value,
        typed: Result<Statement<PredicateText>, serde_json::Error>,
        known: &[&'static str],
    ) -> Self {
        let collision = value.as_object().and_then(|object| {
            canonical::case_fold_collision(object.keys().map(String::as_str), known)
        });
        let numbers = canonical::check_integers(&value);
        let string_field = |name: &str| {
            value
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let statement_type = string_field("_type");
        let predicate_type = string_field("predicateType");
        let shape = typed.map_err(|typed_error| {
            // The predicate is any JSON: `Null` in its place leaves every shape error (a
            // missing `predicate` included) as it was, without a copy of it.
            if let Some(predicate) = value
                .as_object_mut()
                .and_then(|object| object.get_mut("predicate"))
            {
                *predicate = Value::Null;
            }
            serde_json::from_value::<Statement>(value)
                .err()
                .unwrap_or(typed_error)
                .to_string()
        });
        Self {
            collision,
            numbers,
            statement_type,
            predicate_type,
            shape,
        }
    }
}

/// Step 6: every subject names a regular file with its sha256; every file is named.
fn check_subjects<P>(report: &mut VerifyReport, dir: &Path, statement: &Statement<P>) {
    let entries = match bundle::list_files(dir) {
        Ok(entries) => entries,
        Err(e) => {
            report.fail(
                CheckName::Subject,
                None,
                FailureReason::FileUnreadable {
                    name: dir.display().to_string(),
                    message: e.to_string(),
                },
            );
            return;
        }
    };
    let by_name: BTreeMap<&str, &bundle::BundleEntry> =
        entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut seen = BTreeSet::new();
    for subject in &statement.subject {
        let result = check_subject(subject, &by_name, &mut seen);
        report.record(CheckName::Subject, Some(subject.name.clone()), result);
    }
    for entry in &entries {
        if seen.contains(entry.name.as_str()) {
            continue;
        }
        let reason = if entry.kind == EntryKind::File {
            FailureReason::FileNotInSubjects {
                name: entry.name.clone(),
            }
        } else {
            not_regular(entry)
        };
        report.fail(CheckName::File, Some(entry.name.clone()), reason);
    }
}

/// One subject: a valid, unique name whose regular file has the subject's sha256.
fn check_subject<'s>(
    subject: &'s Subject,
    by_name: &BTreeMap<&str, &bundle::BundleEntry>,
    seen: &mut BTreeSet<&'s str>,
) -> Result<(), FailureReason> {
    let name = subject.name.as_str();
    bundle::check_subject_name(name).map_err(|rule| FailureReason::BadSubjectName {
        name: name.to_owned(),
        rule: rule.to_owned(),
    })?;
    if !seen.insert(name) {
        return Err(FailureReason::DuplicateSubject {
            name: name.to_owned(),
        });
    }
    let entry = by_name
        .get(name)
        .ok_or_else(|| FailureReason::SubjectMissingFile {
            name: name.to_owned(),
        })?;
    if entry.kind != EntryKind::File {
        return Err(not_regular(entry));
    }
    let actual = bundle::file_sha256(&entry.path).map_err(|e| FailureReason::FileUnreadable {
        name: name.to_owned(),
        message: e.to_string(),
    })?;
    if actual != subject.digest.sha256 {
        return Err(FailureReason::DigestMismatch {
            name: name.to_owned(),
            expected: Box::new(subject.digest.sha256),
            actual: Box::new(actual),
        });
    }
    Ok(())
}

fn not_regular(entry: &bundle::BundleEntry) -> FailureReason {
    let kind = match entry.kind {
        EntryKind::Symlink => "symlink",
        EntryKind::Special => "special file",
        EntryKind::NonUtf8Name | EntryKind::File => "file with a non-UTF-8 name",
    };
    FailureReason::NotRegularFile {
        name: entry.name.clone(),
        kind: kind.to_owned(),
    }
}

/// A signature's keyid hint as a failure message names it: escaped (untrusted text), cut
/// to 64 characters (a keyid is 64 hex digits), `(none)` when empty.
fn keyid_hint(keyid: &str) -> String {
    if keyid.is_empty() {
        return "(none)".to_owned();
    }
    let cut: String = keyid.chars().take(64).collect();
    receipts::text::escape_untrusted(&cut).into_owned()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::is_standard_padded;
    use receipts::dsse;

    /// Every way a DSSE tool may write bytes: each alphabet, padded or not.
    fn spellings(bytes: &[u8]) -> Vec<String> {
        use base64::Engine as _;
        use base64::engine::general_purpose::{
            STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD,
        };
        vec![
            STANDARD.encode(bytes),
            STANDARD_NO_PAD.encode(bytes),
            URL_SAFE.encode(bytes),
            URL_SAFE_NO_PAD.encode(bytes),
        ]
    }

    proptest! {
        /// The text test agrees with re-encoding, on every spelling of any bytes and on
        /// arbitrary base64-like text, wherever the strict decoder accepts the text.
        #[test]
        fn standard_form_is_what_reencoding_gives(
            bytes in prop::collection::vec(any::<u8>(), 0..40),
            noise in "[A-Za-z0-9+/_=-]{0,12}",
        ) {
            let mut texts = spellings(&bytes);
            texts.push(noise);
            for text in texts {
                if let Ok(decoded) = dsse::decode_base64(&text) {
                    prop_assert_eq!(
                        is_standard_padded(&text),
                        dsse::encode_base64(&decoded) == text,
                        "{}", text
                    );
                }
            }
        }
    }
}
