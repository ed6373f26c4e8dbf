//! A repository commitment, `<repository URL>@<40-hex commit>`, as a competition hotkey
//! publishes it (at most 128 bytes): parsed and checked before anything is fetched.

use std::fmt;
use std::str::FromStr;

use crate::model::Sha256Hex;

/// The most bytes a commitment may have (the chain's commitment field).
pub const MAX_COMMITMENT_BYTES: usize = 128;

/// A parsed commitment: where the repository is and the commit that pins it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Commitment {
    text: String,
    at: usize,
}

/// Where a committed repository lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location<'a> {
    /// A local path (absolute) or a `file://` URL: the path.
    Local(&'a str),
    /// An `https://` URL in the Hugging Face layout, `<base>/<org>/<name>`.
    Https(&'a str),
}

/// Why a commitment is refused before anything is fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommitmentError {
    /// More than [`MAX_COMMITMENT_BYTES`] bytes.
    #[error("the commitment is {bytes} bytes; at most {MAX_COMMITMENT_BYTES} are allowed")]
    TooLong {
        /// Its length, bytes.
        bytes: usize,
    },
    /// No `@<commit>` part, or a commit that is not 40 lowercase hex characters.
    #[error("the commitment must end in `@` and a 40-hex commit (lowercase)")]
    NoCommit,
    /// A URL whose scheme is not `https://` or `file://`, nor an absolute path.
    #[error(
        "the repository must be an `https://` URL, a `file://` URL or an absolute path; got `{url}`"
    )]
    Scheme {
        /// The repository part as given.
        url: String,
    },
    /// Whitespace, a control character or an empty path in the repository part.
    #[error("the repository part has whitespace, a control character or no path")]
    BadCharacters,
}

impl Commitment {
    /// The commitment as published.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The repository part, before the last `@`.
    pub fn url(&self) -> &str {
        &self.text[..self.at]
    }

    /// The pinned commit, 40 lowercase hex characters.
    pub fn commit(&self) -> &str {
        &self.text[self.at + 1..]
    }

    /// Where the repository lives.
    pub fn location(&self) -> Location<'_> {
        let url = self.url();
        match url.strip_prefix("file://") {
            Some(path) => Location::Local(path),
            None if url.starts_with('/') => Location::Local(url),
            None => Location::Https(url),
        }
    }

    /// sha256 of the commitment's bytes: the key of its submission record.
    pub fn digest(&self) -> Sha256Hex {
        Sha256Hex::digest(self.text.as_bytes())
    }
}

impl FromStr for Commitment {
    type Err = CommitmentError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.len() > MAX_COMMITMENT_BYTES {
            return Err(CommitmentError::TooLong { bytes: text.len() });
        }
        let at = text.rfind('@').ok_or(CommitmentError::NoCommit)?;
        let commit = &text[at + 1..];
        if commit.len() != 40
            || !commit
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(CommitmentError::NoCommit);
        }
        let url = &text[..at];
        if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(CommitmentError::BadCharacters);
        }
        let path = if let Some(rest) = url.strip_prefix("https://") {
            rest
        } else if let Some(rest) = url.strip_prefix("file://") {
            rest
        } else if url.starts_with('/') {
            url
        } else {
            return Err(CommitmentError::Scheme {
                url: url.to_owned(),
            });
        };
        if path.is_empty() || path == "/" {
            return Err(CommitmentError::BadCharacters);
        }
        Ok(Self {
            text: text.to_owned(),
            at,
        })
    }
}

impl fmt::Display for Commitment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn parses_the_three_locations() {
        let c: Commitment = format!("https://huggingface.co/org/name@{COMMIT}")
            .parse()
            .unwrap();
        assert_eq!(c.url(), "https://huggingface.co/org/name");
        assert_eq!(c.commit(), COMMIT);
        assert_eq!(
            c.location(),
            Location::Https("https://huggingface.co/org/name")
        );
        let c: Commitment = format!("file:///srv/r@{COMMIT}").parse().unwrap();
        assert_eq!(c.location(), Location::Local("/srv/r"));
        let c: Commitment = format!("/srv/r@{COMMIT}").parse().unwrap();
        assert_eq!(c.location(), Location::Local("/srv/r"));
    }

    #[test]
    fn refuses_long_unpinned_and_odd_commitments() {
        let long = format!("https://h/{}@{COMMIT}", "a".repeat(78));
        assert_eq!(
            long.parse::<Commitment>(),
            Err(CommitmentError::TooLong { bytes: 129 })
        );
        assert_eq!(
            "https://h/o/n@main".parse::<Commitment>(),
            Err(CommitmentError::NoCommit)
        );
        assert_eq!(
            format!("https://h/o/n@{}", COMMIT.to_uppercase()).parse::<Commitment>(),
            Err(CommitmentError::NoCommit)
        );
        assert_eq!(
            format!("http://h/o/n@{COMMIT}").parse::<Commitment>(),
            Err(CommitmentError::Scheme {
                url: "http://h/o/n".into()
            })
        );
        assert_eq!(
            format!("file:///a b@{COMMIT}").parse::<Commitment>(),
            Err(CommitmentError::BadCharacters)
        );
    }
}
