//! The rules of a repository submission (content/repository-submissions.md) that both
//! intake and the verifier run: the commitment's form ([`commitment`]), the fetched
//! tree's digest ([`tree`]), the manifest's checks ([`manifest`], with [`dockerfile`]
//! and [`licence`]), the copy of what those checks read that is published beside each
//! record ([`copy`]) and the per-coldkey queue ([`queue`]). Pure: files come in through
//! [`manifest::RepositoryFiles`], records and registrations as values.

pub mod commitment;
pub mod copy;
pub mod dockerfile;
pub mod licence;
pub mod manifest;
pub mod queue;
pub mod tree;
