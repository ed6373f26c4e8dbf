//! The runtime's Dockerfile (content/repository-submissions.md, Dockerfile): every
//! `FROM` but a reference to an earlier stage pinned by digest, no `ARG` in a `FROM`, no
//! `curl … | sh`, and every package pinned — apt `name=version`, pip `==version` with
//! hashes (a requirements file with `--hash=` on every line), npm exact versions — the
//! unpinned ones named. Static text checks: nothing is built here.

use crate::model::ManifestFieldError;

use super::manifest::{MAX_TEXT_BYTES, RepositoryFiles, error, exact_version};

/// The field every Dockerfile error names.
const FIELD: &str = "runtime.dockerfile";

/// One instruction: its 1-based first line, keyword (upper case) and arguments with
/// continuation lines joined.
struct Instruction {
    line: usize,
    keyword: String,
    args: String,
}

fn instructions(text: &str) -> Vec<Instruction> {
    let mut out = Vec::new();
    let mut current: Option<Instruction> = None;
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if current.is_none() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        let (body, continues) = match trimmed.strip_suffix('\\') {
            Some(body) => (body, true),
            None => (trimmed, false),
        };
        match &mut current {
            Some(instruction) => {
                if !trimmed.starts_with('#') {
                    instruction.args.push(' ');
                    instruction.args.push_str(body);
                }
            }
            None => {
                let (keyword, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
                current = Some(Instruction {
                    line: i + 1,
                    keyword: keyword.to_ascii_uppercase(),
                    args: args.trim().to_owned(),
                });
            }
        }
        if !continues && let Some(done) = current.take() {
            out.push(done);
        }
    }
    out.extend(current);
    out
}

/// Every error of the Dockerfile `text`; `files` gives the requirements files it names.
pub fn check(text: &str, files: &dyn RepositoryFiles) -> Vec<ManifestFieldError> {
    let mut errors = Vec::new();
    let mut stages: Vec<String> = Vec::new();
    for instruction in instructions(text) {
        let line = instruction.line;
        match instruction.keyword.as_str() {
            "FROM" => check_from(&instruction.args, line, &mut stages, &mut errors),
            "RUN" => check_run(&instruction.args, line, files, &mut errors),
            _ => {}
        }
    }
    errors
}

fn check_from(
    args: &str,
    line: usize,
    stages: &mut Vec<String>,
    errors: &mut Vec<ManifestFieldError>,
) {
    let tokens: Vec<&str> = args.split_whitespace().collect();
    if tokens.iter().any(|t| t.contains('$')) {
        errors.push(error(
            FIELD,
            "arg_in_from",
            format!("line {line}: `FROM {args}` uses a build argument; the base image must be written out and pinned"),
        ));
        return;
    }
    let mut rest = tokens.iter().skip_while(|t| t.starts_with("--"));
    let Some(image) = rest.next() else {
        errors.push(error(
            FIELD,
            "unpinned_base_image",
            format!("line {line}: `FROM` names no image"),
        ));
        return;
    };
    let earlier_stage = stages.iter().any(|s| s.eq_ignore_ascii_case(image));
    if !earlier_stage && !image.eq_ignore_ascii_case("scratch") && !pinned_by_digest(image) {
        errors.push(error(
            FIELD,
            "unpinned_base_image",
            format!(
                "line {line}: base image `{image}` is not pinned by digest (`@sha256:<64 hex>`)"
            ),
        ));
    }
    if let (Some(as_kw), Some(name)) = (rest.next(), rest.next())
        && as_kw.eq_ignore_ascii_case("as")
    {
        stages.push((*name).to_owned());
    }
}

fn pinned_by_digest(image: &str) -> bool {
    image
        .rsplit_once("@sha256:")
        .is_some_and(|(_, hex)| crate::model::Sha256Hex::is_valid(hex))
}

/// Shell words of one simple command (quotes removed; good enough for package names).
fn words(command: &str) -> Vec<String> {
    command
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The words of a simple command without `sudo`, `env` and leading `VAR=value`s.
fn command_words(command: &str) -> Vec<String> {
    let mut words = words(command);
    while let Some(first) = words.first() {
        let assignment = first.contains('=') && !first.starts_with('-');
        if first == "sudo" || first == "env" || assignment {
            words.remove(0);
        } else {
            break;
        }
    }
    words
}

const SHELLS: [&str; 8] = [
    "sh", "bash", "zsh", "dash", "ash", "ksh", "python", "python3",
];

fn check_run(
    args: &str,
    line: usize,
    files: &dyn RepositoryFiles,
    errors: &mut Vec<ManifestFieldError>,
) {
    // Sequences split on `&&`, `||` and `;`; each is a pipeline split on `|`.
    let sequences = args
        .split("&&")
        .flat_map(|s| s.split("||"))
        .flat_map(|s| s.split(';'));
    for sequence in sequences {
        let stages: Vec<Vec<String>> = sequence.split('|').map(command_words).collect();
        let fetches = stages
            .iter()
            .position(|w| w.first().is_some_and(|c| c == "curl" || c == "wget"));
        if let Some(at) = fetches
            && stages
                .iter()
                .skip(at + 1)
                .any(|w| w.first().is_some_and(|c| SHELLS.contains(&c.as_str())))
        {
            errors.push(error(
                FIELD,
                "pipe_to_shell",
                format!(
                    "line {line}: `{}` pipes a download into a shell",
                    sequence.trim()
                ),
            ));
        }
        for words in &stages {
            check_packages(words, line, files, errors);
        }
    }
}

fn check_packages(
    words: &[String],
    line: usize,
    files: &dyn RepositoryFiles,
    errors: &mut Vec<ManifestFieldError>,
) {
    let Some(program) = words.first().map(String::as_str) else {
        return;
    };
    let rest: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
    match program {
        "apt-get" | "apt" => {
            let Some(at) = rest.iter().position(|w| *w == "install") else {
                return;
            };
            for package in rest.iter().skip(at + 1).filter(|w| !w.starts_with('-')) {
                let pinned = package
                    .split_once('=')
                    .is_some_and(|(n, v)| !n.is_empty() && !v.is_empty());
                if !pinned {
                    errors.push(error(
                        FIELD,
                        "unpinned_apt_package",
                        format!("line {line}: apt package `{package}` has no `=version`"),
                    ));
                }
            }
        }
        "pip" | "pip3" => pip_install(&rest, line, files, errors),
        "python" | "python3" if rest.starts_with(&["-m", "pip"]) => {
            pip_install(rest.get(2..).unwrap_or_default(), line, files, errors)
        }
        "npm" => {
            if !matches!(rest.first(), Some(&("install" | "i" | "add"))) {
                return;
            }
            for package in rest.iter().skip(1).filter(|w| !w.starts_with('-')) {
                let version = package
                    .get(1..)
                    .and_then(|p| p.rsplit_once('@'))
                    .map(|(_, v)| v);
                if !version.is_some_and(exact_version) {
                    errors.push(error(
                        FIELD,
                        "unpinned_npm_package",
                        format!("line {line}: npm package `{package}` has no exact version (`name@1.2.3`)"),
                    ));
                }
            }
        }
        _ => {}
    }
}

/// pip options that take a value (the value is not a package).
const PIP_VALUED: [&str; 12] = [
    "-c",
    "--constraint",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "--platform",
];

fn pip_install(
    args: &[&str],
    line: usize,
    files: &dyn RepositoryFiles,
    errors: &mut Vec<ManifestFieldError>,
) {
    if args.first() != Some(&"install") {
        return;
    }
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        if *word == "-r" || *word == "--requirement" {
            if let Some(file) = words.next() {
                requirements(file, line, files, errors);
            }
        } else if let Some(file) = word.strip_prefix("--requirement=") {
            requirements(file, line, files, errors);
        } else if PIP_VALUED.contains(word) {
            words.next();
        } else if word.starts_with('-') || word.starts_with('.') || word.starts_with('/') {
            // A flag, or a local path (the repository's own code).
        } else if !pinned_requirement(word) {
            errors.push(error(
                FIELD,
                "unpinned_pip_package",
                format!("line {line}: pip package `{word}` has no `==version`"),
            ));
        } else {
            errors.push(error(
                FIELD,
                "pip_hashes_missing",
                format!("line {line}: pip package `{word}` is installed without a hash: list it in a requirements file with `--hash=sha256:…`"),
            ));
        }
    }
}

fn pinned_requirement(requirement: &str) -> bool {
    requirement.split_once("==").is_some_and(|(name, version)| {
        !name.is_empty() && !version.is_empty() && !version.contains('*')
    })
}

/// A requirements file named by `pip install -r`: every requirement `name==version`
/// with a `--hash=`.
fn requirements(
    path: &str,
    line: usize,
    files: &dyn RepositoryFiles,
    errors: &mut Vec<ManifestFieldError>,
) {
    let path = path.trim_start_matches("./");
    let Some(text) = files.text(path) else {
        errors.push(error(
            FIELD,
            "requirements_missing",
            format!("line {line}: requirements file `{path}` is not a UTF-8 file of the repository (at most {MAX_TEXT_BYTES} bytes)"),
        ));
        return;
    };
    let joined = text.replace("\\\n", " ");
    for requirement in joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let Some(name) = requirement.split_whitespace().next() else {
            continue;
        };
        if name.starts_with('-') {
            continue;
        }
        if !pinned_requirement(name) {
            errors.push(error(
                path,
                "unpinned_pip_package",
                format!("pip requirement `{name}` has no `==version`"),
            ));
        } else if !requirement.contains("--hash=") {
            errors.push(error(
                path,
                "pip_hashes_missing",
                format!("pip requirement `{name}` has no `--hash=`"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Sha256Hex;

    struct NoFiles;
    impl RepositoryFiles for NoFiles {
        fn sha256(&self, _: &str) -> Option<Sha256Hex> {
            None
        }
        fn text(&self, path: &str) -> Option<String> {
            (path == "requirements.txt").then(|| {
                "torch==2.5.1 \\\n    --hash=sha256:abc\nnumpy==2.1.0\nrequests\n".to_owned()
            })
        }
    }

    fn reasons(text: &str) -> Vec<(String, String)> {
        check(text, &NoFiles)
            .into_iter()
            .map(|e| (e.reason, e.message))
            .collect()
    }

    const DIGEST: &str = "4c3fa1ed4fa8bb1b24c09e25e2d1b7bd20bd68d8c0c0b1f3b9e0b2d3a4a5a6a7";

    #[test]
    fn pinned_stages_and_references_to_earlier_stages_pass() {
        let text = format!(
            "# build\nFROM python:3.11@sha256:{DIGEST} AS build\nRUN apt-get install -y curl=7.88.1-10\nFROM build\nFROM scratch\n"
        );
        assert_eq!(reasons(&text), []);
    }

    #[test]
    fn an_unpinned_base_image_is_named() {
        assert_eq!(
            reasons("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"),
            [(
                "unpinned_base_image".to_owned(),
                "line 1: base image `nvidia/cuda:12.4.1-runtime-ubuntu22.04` is not pinned by digest (`@sha256:<64 hex>`)".to_owned()
            )]
        );
    }

    #[test]
    fn an_arg_in_from_is_refused() {
        let r = reasons(&format!("ARG BASE=python@sha256:{DIGEST}\nFROM $BASE\n"));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0, "arg_in_from");
        assert!(r[0].1.starts_with("line 2: `FROM $BASE`"));
    }

    #[test]
    fn curl_piped_to_a_shell_is_refused() {
        let r = reasons(&format!(
            "FROM x@sha256:{DIGEST}\nRUN set -e && \\\n  curl -fsSL https://example.com/i.sh | sudo bash\n"
        ));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0, "pipe_to_shell");
        assert!(r[0].1.starts_with("line 2: "));
    }

    #[test]
    fn unpinned_apt_packages_are_named() {
        let r = reasons(&format!(
            "FROM x@sha256:{DIGEST}\nRUN apt-get update && apt-get install -y --no-install-recommends git=1:2.39 libssl-dev\n"
        ));
        assert_eq!(
            r,
            [(
                "unpinned_apt_package".to_owned(),
                "line 2: apt package `libssl-dev` has no `=version`".to_owned()
            )]
        );
    }

    #[test]
    fn pip_needs_versions_and_hashes() {
        let r = reasons(&format!(
            "FROM x@sha256:{DIGEST}\nRUN pip install --no-cache-dir vllm==0.6.3 fastapi\nRUN python3 -m pip install -r requirements.txt\n"
        ));
        let got: Vec<&str> = r.iter().map(|(reason, _)| reason.as_str()).collect();
        assert_eq!(
            got,
            [
                "pip_hashes_missing",
                "unpinned_pip_package",
                "pip_hashes_missing",
                "unpinned_pip_package"
            ]
        );
        assert_eq!(r[1].1, "line 2: pip package `fastapi` has no `==version`");
        assert_eq!(r[2].1, "pip requirement `numpy==2.1.0` has no `--hash=`");
        assert_eq!(r[3].1, "pip requirement `requests` has no `==version`");
    }

    #[test]
    fn npm_needs_exact_versions() {
        let r = reasons(&format!(
            "FROM x@sha256:{DIGEST}\nRUN npm install -g @scope/tool@1.2.3 left-pad@^1.3.0 express\n"
        ));
        let named: Vec<&str> = r.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(
            named,
            [
                "line 2: npm package `left-pad@^1.3.0` has no exact version (`name@1.2.3`)",
                "line 2: npm package `express` has no exact version (`name@1.2.3`)"
            ]
        );
    }
}
