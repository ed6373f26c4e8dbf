//! Small validated value types shared by every record: digests, ids, timestamps.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::ModelError;

/// A SHA-256 digest as 64 lowercase hex characters (content/receipts.md, Numbers: digests are
/// lowercase hex strings), held inline: comparing, hashing or cloning one reads no other
/// memory and allocates nothing (the site sorts and compares some 150,000 of them on every
/// build of a 10,000-round archive).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256Hex([u8; 64]);

impl Sha256Hex {
    /// The digest of `bytes`.
    pub fn digest(bytes: &[u8]) -> Self {
        use sha2::Digest;
        Self::from_bytes(sha2::Sha256::digest(bytes).into())
    }

    /// Wraps 32 raw digest bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        let mut hex = [0u8; 64];
        // Cannot fail: 64 bytes hold the hex of 32.
        let _ = hex::encode_to_slice(bytes, &mut hex);
        Self(hex)
    }

    /// Whether `s` is 64 lowercase hex characters (what [`Sha256Hex::from_str`] accepts),
    /// checked without making one.
    pub fn is_valid(s: &str) -> bool {
        s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }

    /// The 64 lowercase hex characters.
    pub fn as_str(&self) -> &str {
        // Only lowercase hex (ASCII) is ever stored, so this is never the empty fallback.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The first 7 and last 5 characters, as the scoreboard abbreviates patches
    /// (`4c3fe52…98761` in content/rounds.md).
    pub fn short(&self) -> String {
        let hex = self.as_str();
        format!("{}…{}", &hex[..7], &hex[59..])
    }
}

impl FromStr for Sha256Hex {
    type Err = ModelError;

    /// Accepts exactly 64 lowercase hex characters; anything else is
    /// [`ModelError::InvalidDigest`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match <[u8; 64]>::try_from(s.as_bytes()) {
            Ok(hex) if Self::is_valid(s) => Ok(Self(hex)),
            _ => Err(ModelError::InvalidDigest {
                value: s.to_owned(),
            }),
        }
    }
}

impl fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Hex({})", self.as_str())
    }
}

impl Serialize for Sha256Hex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Sha256Hex {
    /// From a JSON string, borrowed where the input allows (no allocation).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Hex;
        impl serde::de::Visitor<'_> for Hex {
            type Value = Sha256Hex;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("64 lowercase hex characters")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Sha256Hex, E> {
                s.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(Hex)
    }
}

impl schemars::JsonSchema for Sha256Hex {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Sha256Hex".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^[0-9a-f]{64}$" })
    }
}

/// A campaign id: `[a-z0-9-]{1,64}` (content/data-directory.md). It names a directory of the data
/// directory, so nothing else is accepted.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct CampaignId(String);

impl CampaignId {
    /// The id as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl CampaignId {
    /// Whether `s` is a campaign id, `[a-z0-9-]{1,64}` (what [`CampaignId::from_str`]
    /// accepts), checked without making one.
    pub fn is_valid(s: &str) -> bool {
        (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
    }
}

impl FromStr for CampaignId {
    type Err = ModelError;

    /// Errors with [`ModelError::InvalidCampaignId`] unless `s` matches `[a-z0-9-]{1,64}`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if Self::is_valid(s) {
            Ok(Self(s.to_owned()))
        } else {
            Err(ModelError::InvalidCampaignId {
                value: s.to_owned(),
            })
        }
    }
}

impl fmt::Display for CampaignId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for CampaignId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for CampaignId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for CampaignId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CampaignId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^[a-z0-9-]{1,64}$" })
    }
}

/// A miner id (a hotkey in the competition): `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`. Miner ids
/// appear in file names, command lines and pages, so the alphabet is closed and the first
/// character can be neither a dot nor a dash.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct MinerId(String);

impl MinerId {
    /// The id as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for MinerId {
    type Err = ModelError;

    /// Errors with [`ModelError::InvalidMinerId`] unless `s` matches
    /// `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            && s.as_bytes()[0].is_ascii_alphanumeric()
        {
            Ok(Self(s.to_owned()))
        } else {
            Err(ModelError::InvalidMinerId {
                value: s.to_owned(),
            })
        }
    }
}

impl fmt::Display for MinerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for MinerId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for MinerId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for MinerId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MinerId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" })
    }
}

/// A point in time, UTC, serialized as RFC 3339 with `Z` and whole microseconds
/// (content/receipts.md: times RFC 3339 UTC with `Z`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// The current time, truncated to microseconds so it survives a round trip.
    pub fn now() -> Self {
        Self::from_datetime(OffsetDateTime::now_utc())
    }

    /// Wraps a date-time, converted to UTC and truncated to microseconds.
    pub fn from_datetime(t: OffsetDateTime) -> Self {
        let t = t.to_offset(time::UtcOffset::UTC);
        let micros = t.microsecond();
        Self(t.replace_microsecond(micros).unwrap_or(t))
    }

    /// Seconds since the Unix epoch, UTC.
    pub fn from_unix_seconds(seconds: i64) -> Result<Self, ModelError> {
        OffsetDateTime::from_unix_timestamp(seconds)
            .map(Self)
            .map_err(|_| ModelError::InvalidTimestamp {
                value: seconds.to_string(),
            })
    }

    /// The wrapped date-time.
    pub fn datetime(&self) -> OffsetDateTime {
        self.0
    }

    /// Whole milliseconds from `self` to `later` (negative if `later` is earlier).
    pub fn millis_until(&self, later: Timestamp) -> i64 {
        (later.0 - self.0).whole_milliseconds() as i64
    }

    /// RFC 3339 text, e.g. `2026-09-17T15:03:46.123456Z`.
    pub fn to_rfc3339(&self) -> String {
        // Formatting a UTC OffsetDateTime with Rfc3339 only fails for years outside
        // 0..=9999, which `from_datetime` callers never produce; fall back to the debug form.
        self.0
            .format(&Rfc3339)
            .unwrap_or_else(|_| format!("{:?}", self.0))
    }
}

impl FromStr for Timestamp {
    type Err = ModelError;

    /// Parses RFC 3339; the offset must be `Z`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if !s.ends_with('Z') {
            return Err(ModelError::InvalidTimestamp {
                value: s.to_owned(),
            });
        }
        OffsetDateTime::parse(s, &Rfc3339)
            .map(Self::from_datetime)
            .map_err(|_| ModelError::InvalidTimestamp {
                value: s.to_owned(),
            })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "format": "date-time" })
    }
}

/// 32 bytes of seed or salt, written as 64 lowercase hex characters (content/measurement.md, Seeds).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Seed32(pub [u8; 32]);

impl Seed32 {
    /// The hex form.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Debug for Seed32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Seed32({})", self.to_hex())
    }
}

impl FromStr for Seed32 {
    type Err = ModelError;

    /// Exactly 64 lowercase hex characters.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let digest: Sha256Hex = s.parse().map_err(|_| ModelError::InvalidSeed {
            value: s.to_owned(),
        })?;
        let mut out = [0u8; 32];
        hex::decode_to_slice(digest.as_str(), &mut out).map_err(|_| ModelError::InvalidSeed {
            value: s.to_owned(),
        })?;
        Ok(Self(out))
    }
}

impl Serialize for Seed32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Seed32 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Seed32 {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Seed32".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^[0-9a-f]{64}$" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_lowercase_hex_of_sha256() {
        // FIPS 180-2, appendix B.1.
        assert_eq!(
            Sha256Hex::digest(b"abc").as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let mut bytes = [0u8; 32];
        bytes[0] = 0xab;
        bytes[31] = 0x0f;
        let hex = Sha256Hex::from_bytes(bytes);
        assert_eq!(hex.as_str(), format!("ab{}0f", "0".repeat(60)));
        assert_eq!(hex.as_str().parse::<Sha256Hex>().unwrap(), hex);
    }
}
