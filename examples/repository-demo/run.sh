#!/usr/bin/env bash
# The repository campaign's demo (content/repository-submissions.md, Demo): a campaign of
# kind `repository`, one competition hotkey, and four repositories committed from
# submissions/: `good` passes review and is queued for a round, `unpinned` is rejected
# naming its unpinned base image, `copy` (good's code reformatted and re-commented) is
# disqualified as a copy crediting `good`, and `llm-caller` fails review for calling a
# hosted LLM endpoint (content/review.md); round 1 seats `good` beside the baseline, its
# tree as fetched and reviewed (content/repository-submissions.md, In a round); then the
# site is built from the data directory, the submissions' pages and round 1's entry page
# are checked for what they must show, and the data directory is verified.
#
# Usage: examples/repository-demo/run.sh [REFEREE_BIN] [WORK_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
referee="${1:-$here/../../target/debug/referee}"
work="${2:-$here/../../target/repository-demo}"
rm -rf "$work"
mkdir -p "$work/repos"
work="$(cd "$work" && pwd)"
data="$work/data"

# The demo's baseline (a fixed commit), and the campaign beside it.
"$referee" demo --prepare --dir "$work" --data "$data" >/dev/null
cp "$here/campaign.toml" "$work/campaign.toml"
"$referee" campaign add "$work/campaign.toml" --data "$data" >/dev/null
"$referee" miner add hot-demo --campaign repo-demo --coldkey cold-demo \
  --role competition --registration 0xdemo-registration --data "$data"

# Each submission becomes a git repository at one commit (fixed author and time); with a
# second name, the files of submissions/<name> are laid over a copy of that one's.
commit_repo() {
  local name=$1 base=${2:-} dir="$work/repos/$1"
  if [ -n "$base" ]; then
    cp -r "$here/submissions/$base" "$dir"
    cp -r "$here/submissions/$name/." "$dir"
  else
    cp -r "$here/submissions/$name" "$dir"
  fi
  git -C "$dir" init --quiet --initial-branch=main
  git -C "$dir" add -A
  GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@referee.invalid \
  GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@referee.invalid \
  GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z \
    git -C "$dir" -c commit.gpgsign=false commit --quiet -m "$name"
  echo "file://$dir@$(git -C "$dir" rev-parse HEAD)"
}

good=$(commit_repo good)
unpinned=$(commit_repo unpinned)
copy=$(commit_repo copy good)
llm_caller=$(commit_repo llm-caller good)
echo "== ingest $good"
"$referee" ingest --campaign repo-demo --miner hot-demo --data "$data" \
  --repository "$good" --committed-at 2026-01-01T00:00:00Z
echo "== ingest $unpinned (rejected: exit 1)"
if "$referee" ingest --campaign repo-demo --miner hot-demo --data "$data" \
  --repository "$unpinned" --committed-at 2026-01-01T01:00:00Z; then
  echo "the unpinned repository was not rejected" >&2
  exit 1
fi

echo "== ingest $copy (a copy of good: exit 1)"
if "$referee" ingest --campaign repo-demo --miner hot-demo --data "$data" \
  --repository "$copy" --committed-at 2026-01-01T02:00:00Z; then
  echo "the copy was not disqualified" >&2
  exit 1
fi
echo "== ingest $llm_caller (calls a hosted LLM: review FAIL, exit 1)"
if "$referee" ingest --campaign repo-demo --miner hot-demo --data "$data" \
  --repository "$llm_caller" --committed-at 2026-01-01T03:00:00Z; then
  echo "the repository calling a hosted LLM was not refused" >&2
  exit 1
fi

echo "== round 1: the baseline and \`good\`, its tree as fetched and reviewed"
# The evaluator key (outside the data directory) and the keyring that trusts it.
"$referee" keygen --key-dir "$work/keys" --keyring "$data/keyring.json" >/dev/null
"$referee" round --campaign repo-demo --data "$data" --key-dir "$work/keys" \
  >"$work/round-1.txt"
round1="$data/repo-demo/rounds/1"
good_sha=$(printf '%s' "$good" | sha256sum | cut -d' ' -f1)
# The round's inputs: good's commitment (in place of a diff) and its review record.
[ "$(sha256sum <"$round1/inputs/commitments/$good_sha.txt" | cut -d' ' -f1)" = "$good_sha" ]
test -f "$round1/inputs/reviews/$good_sha.json"
grep "^Round 1\|^Decision" "$work/round-1.txt"

echo "== site"
"$referee" site build --data "$data" --out "$work/site" >/dev/null
"$referee" site check "$work/site" >/dev/null
page() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
good_page="$work/site/s/$(page "$good")/index.html"
unpinned_page="$work/site/s/$(page "$unpinned")/index.html"
grep -q "bench_queued" "$good_page"
grep -q "Fetched tree sha256" "$good_page"
grep -q "unpinned_base_image" "$unpinned_page"
grep -q "vllm/vllm-openai:latest" "$unpinned_page"
copy_page="$work/site/s/$(page "$copy")/index.html"
llm_page="$work/site/s/$(page "$llm_caller")/index.html"
grep -q "Verdict</dt><dd>PASS" "$good_page"
grep -q "disqualified: a copy of submission $(page "$good")" "$copy_page"
grep -q "llm.endpoint" "$llm_page"
grep -q "api.openai.com" "$llm_page"
grep -q "server.py:2" "$llm_page"
# Round 1's entry of `good`: the review that let it run and the commitment it ran.
entry_page="$work/site/c/repo-demo/r/1/e/candidate-1-hot-demo/index.html"
grep -q "Review before it ran" "$entry_page"
grep -q "The repository it ran" "$entry_page"
grep -q "inputs/commitments/$good_sha.txt" "$entry_page"
echo "site: $good_page"
echo "site: $entry_page"
echo "site: $unpinned_page"
echo "site: $copy_page"
echo "site: $llm_page"

echo "== verify"
# Round 1 verified, and the records recomputed from the published copies and the records
# (submissions.manifest, submissions.queue, submissions.review).
"$referee" verify --keyring "$data/keyring.json" "$data"
