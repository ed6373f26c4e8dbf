//! Every rule of `rules/v1.toml`: a hit with its exact findings, and a benign look-alike
//! that stays PASS.

use review::{RuleSet, RulesError, Verdict};

use super::{findings, findings_of, input, noise, rules, tree, weight};

const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const HEX: &[u8] = b"0123456789abcdef";
const NONE: [&str; 0] = [];

#[test]
fn builtin_rules_parse_with_their_ids_and_the_digest_of_their_bytes() {
    let rules = rules();
    assert_eq!(rules.version, 1);
    assert_eq!(
        rules.digest,
        receipts::model::Sha256Hex::digest(review::rules::RULES_V1.as_bytes())
    );
    // The verifier knows the built-in rules file by this digest: a review made under any
    // other is refused (`entries.review`, `submissions.review`).
    assert!(receipts::rules::review::is_known_rules(
        rules.version,
        &rules.digest
    ));
    let ids: Vec<&str> = rules.rules.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "network.client",
            "network.dns",
            "network.raw-socket",
            "exec.decoded",
            "exec.dynamic",
            "exec.subprocess",
            "blob.base64",
            "blob.hex",
            "blob.archive",
            "blob.compiled",
            "blob.too-large",
            "python.syntax-error",
            "llm.endpoint",
            "llm.sdk",
            "secrets.environment",
            "secrets.environment-dump",
            "bench.referee-marker",
            "bench.campaign-marker",
        ]
    );
}

#[test]
fn a_rules_file_with_a_problem_is_refused() {
    let dup = "version = 1\nmax_text_bytes = 10\ndocumentation = []\n\
        [[rule]]\nid = \"a\"\nseverity = \"fail\"\nsummary = \"s\"\ntoo_large = true\n\
        [[rule]]\nid = \"a\"\nseverity = \"fail\"\nsummary = \"s\"\ntoo_large = true\n";
    assert!(matches!(RuleSet::parse(dup), Err(RulesError::DuplicateId(id)) if id == "a"));
    let empty = "version = 1\nmax_text_bytes = 10\ndocumentation = []\n\
        [[rule]]\nid = \"a\"\nseverity = \"fail\"\nsummary = \"s\"\n";
    assert!(matches!(RuleSet::parse(empty), Err(RulesError::NoDetector(id)) if id == "a"));
    let unknown = "version = 1\nmax_text_bytes = 10\ndocumentation = []\n\
        [[rule]]\nid = \"a\"\nseverity = \"fail\"\nsummary = \"s\"\npython_import = [\"x\"]\n";
    assert!(matches!(RuleSet::parse(unknown), Err(RulesError::Toml(_))));
    let bad_id = "version = 1\nmax_text_bytes = 10\ndocumentation = []\n\
        [[rule]]\nid = \"A b\"\nseverity = \"fail\"\nsummary = \"s\"\ntoo_large = true\n";
    assert!(matches!(RuleSet::parse(bad_id), Err(RulesError::BadId(_))));
    let bad_magic = "version = 1\nmax_text_bytes = 10\ndocumentation = []\n\
        [[rule]]\nid = \"a\"\nseverity = \"fail\"\nsummary = \"s\"\nfile_magic = [{ hex = \"zz\" }]\n";
    assert!(matches!(
        RuleSet::parse(bad_magic),
        Err(RulesError::BadMagic { .. })
    ));
}

#[test]
fn network_client_hit_and_the_declared_server_look_alike() {
    let hit = "import aiohttp\nfrom urllib import request as r\nimport requests\n\n\
        async def f():\n    async with aiohttp.ClientSession() as s:\n        return r.urlopen('http://x')\n";
    assert_eq!(
        findings(&[("app.py", hit)]),
        [
            "app.py:2 network.client urllib.request",
            "app.py:3 network.client requests",
            "app.py:6 network.client aiohttp.ClientSession",
        ]
    );
    let server = "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n\
        import socketserver\nimport aiohttp.web\n\n# requests are served, never sent\n\
        server = ThreadingHTTPServer(('127.0.0.1', 8080), BaseHTTPRequestHandler)\n";
    assert_eq!(findings(&[("server.py", server)]), NONE);
}

#[test]
fn network_dns_hit_and_a_local_function_of_the_same_name() {
    let hit = "import socket\naddress = socket.getaddrinfo('example.com', 80)\n";
    assert_eq!(
        findings(&[("a.py", hit)]),
        [
            "a.py:1 network.raw-socket socket",
            "a.py:2 network.dns socket.getaddrinfo"
        ]
    );
    let benign =
        "def getaddrinfo(host):\n    return host\n\ngetaddrinfo('x')\nimport dnslib_free_name\n";
    assert_eq!(findings(&[("a.py", benign)]), NONE);
}

#[test]
fn raw_socket_hit_and_socketserver() {
    assert_eq!(
        findings(&[("a.py", "from socket import socket as s\n")]),
        ["a.py:1 network.raw-socket socket"]
    );
    assert_eq!(findings(&[("a.py", "import socketserver\n")]), NONE);
}

#[test]
fn exec_of_decoded_data_hit_and_decoding_without_exec() {
    let hit = "import base64\nexec(base64.b64decode('cHJpbnQoMSk='))\n\
        eval(blob.decode('utf-8'))\n";
    assert_eq!(
        findings(&[("a.py", hit)]),
        [
            "a.py:2 exec.decoded exec(base64.b64decode(…))",
            "a.py:2 exec.dynamic exec",
            "a.py:3 exec.decoded eval(.decode(…))",
            "a.py:3 exec.dynamic eval",
        ]
    );
    let benign = "import base64\nimport torch\n\ndata = base64.b64decode(payload)\n\
        tensor = torch.frombuffer(data)\nprint(text.decode('utf-8'))\n";
    assert_eq!(findings(&[("a.py", benign)]), NONE);
}

#[test]
fn dynamic_code_hit_and_model_eval() {
    let hit = "result = eval(expression)\nmodule = __import__(name)\n";
    assert_eq!(
        findings(&[("a.py", hit)]),
        ["a.py:1 exec.dynamic eval", "a.py:2 exec.dynamic __import__"]
    );
    let benign = "import re\nimport torch\n\nmodel.eval()\npattern = re.compile('x+')\n\
        fast = torch.compile(model)\ndef run(eval=False):\n    return f(eval=True)\n";
    assert_eq!(findings(&[("a.py", benign)]), NONE);
}

#[test]
fn subprocess_hit_and_a_process_pool() {
    let hit = "import subprocess\nimport os\n\nsubprocess.run(['nvidia-smi'])\nos.system('ls')\n";
    assert_eq!(
        findings(&[("a.py", hit)]),
        [
            "a.py:1 exec.subprocess subprocess",
            "a.py:5 exec.subprocess os.system"
        ]
    );
    let benign = "from concurrent.futures import ProcessPoolExecutor\nimport os\n\n\
        # subprocess is not used here\npath = os.path.join('a', 'b')\n";
    assert_eq!(findings(&[("a.py", benign)]), NONE);
}

#[test]
fn dynamic_imports_count_as_imports() {
    let hit = "import importlib\nm = importlib.import_module('requests')\n";
    assert_eq!(
        findings(&[("a.py", hit)]),
        [
            "a.py:2 exec.dynamic importlib.import_module",
            "a.py:2 network.client requests",
        ]
    );
}

#[test]
fn base64_blob_hit_and_a_low_entropy_run() {
    let payload = noise(BASE64, 300);
    let python = format!("KEY = 1\nBLOB = (\n    '{payload}'\n)\n");
    let text = format!("header\n{payload}\n");
    assert_eq!(
        findings(&[("a.py", &python), ("data/blob.txt", &text)]),
        [
            "a.py:3 blob.base64 base64 run of 300 characters, 5843 millibits each",
            "data/blob.txt:2 blob.base64 base64 run of 300 characters, 5843 millibits each",
        ]
    );
    let flat = format!("RULE = '{}'\n", "=".repeat(300));
    let readme = format!("# Model card\n\n![badge](data:image/png;base64,{payload})\n");
    assert_eq!(findings(&[("a.py", &flat), ("README.md", &readme)]), NONE);
}

#[test]
fn hex_blob_hit_and_pinned_digests() {
    let payload = noise(HEX, 256);
    assert_eq!(
        findings(&[("payload.txt", &format!("{payload}\n"))]),
        ["payload.txt:1 blob.hex hex run of 256 characters, 3959 millibits each"]
    );
    let pins = format!("torch==2.4.0 --hash=sha256:{}\n", noise(HEX, 64));
    assert_eq!(findings(&[("requirements.txt", &pins)]), NONE);
}

#[test]
fn archive_hit_and_the_same_archive_as_a_weights_file() {
    let dir = tree(&[
        ("vendor/lib.tar.gz", b"\x1f\x8b\x08\x00rest"),
        ("data.bin", b"PK\x03\x04rest"),
        ("tarball", &{
            let mut tar = vec![0u8; 262];
            tar[257..262].copy_from_slice(b"ustar");
            tar
        }),
    ]);
    assert_eq!(
        findings_of(&input(dir.path())),
        [
            "data.bin blob.archive magic 504b0304",
            "tarball blob.archive magic 7573746172",
            "vendor/lib.tar.gz blob.archive .gz",
        ]
    );
    let dir = tree(&[("model.bin", b"PK\x03\x04torch zip")]);
    let mut weights = input(dir.path());
    weights.weights.push(weight("model.bin", &"a".repeat(64)));
    assert_eq!(findings_of(&weights), NONE);
}

#[test]
fn compiled_code_hit_and_a_text_that_says_elf() {
    let dir = tree(&[
        ("kernels/fast.so", b"\x7fELF\x02\x01\x01"),
        ("run", b"\x7fELF\x02\x01\x01"),
        ("__pycache__/a.cpython-311.pyc", b"\xa7\x0d\x0d\x0a"),
    ]);
    assert_eq!(
        findings_of(&input(dir.path())),
        [
            "__pycache__/a.cpython-311.pyc blob.compiled .pyc",
            "kernels/fast.so blob.compiled .so",
            "run blob.compiled magic 7f454c46",
        ]
    );
    assert_eq!(
        findings(&[
            ("elf.txt", "ELF binaries are not shipped\n"),
            ("notes.solution", "x\n")
        ]),
        NONE
    );
}

#[test]
fn too_large_hit_and_a_large_weights_file() {
    let big = vec![b' '; 4 * 1024 * 1024 + 1];
    let dir = tree(&[("blob.dat", &big)]);
    assert_eq!(
        findings_of(&input(dir.path())),
        ["blob.dat blob.too-large over the scan bound"]
    );
    let mut weights = input(dir.path());
    weights.weights.push(weight("blob.dat", &"b".repeat(64)));
    assert_eq!(findings_of(&weights), NONE);
}

#[test]
fn syntax_error_hit_and_modern_syntax() {
    assert_eq!(
        findings(&[("a.py", "x = 1\ndef f(:\n    pass\n")]),
        ["a.py:2 python.syntax-error syntax error"]
    );
    let dir = tree(&[("b.py", b"\xff\xfe not utf-8")]);
    assert_eq!(
        findings_of(&input(dir.path())),
        ["b.py:1 python.syntax-error not UTF-8"]
    );
    let modern = "match command:\n    case [x, *rest] if (n := len(rest)) > 1:\n        print(f'{x!r:>{n}}')\n    case _:\n        pass\n";
    assert_eq!(findings(&[("a.py", modern)]), NONE);
}

#[test]
fn llm_endpoint_hit_and_mentions_in_comments_docstrings_and_docs() {
    let python = "URL = 'https://api.openai.com/v1/chat/completions'\n";
    let config = "model: local\nbase_url: https://API.Anthropic.com/v1\n";
    assert_eq!(
        findings(&[("a.py", python), ("config.yaml", config)]),
        [
            "a.py:1 llm.endpoint api.openai.com",
            "config.yaml:2 llm.endpoint api.anthropic.com",
        ]
    );
    let python =
        "\"\"\"Serves locally; never calls api.openai.com.\"\"\"\n# nor api.anthropic.com\nx = 1\n";
    let readme = "Unlike api.openai.com, this runs offline.\n";
    assert_eq!(findings(&[("a.py", python), ("README.md", readme)]), NONE);
}

#[test]
fn llm_sdk_hit_and_look_alikes() {
    let python = "from openai import OpenAI\nimport google.generativeai as genai\n";
    let requirements = "torch==2.4.0\nOpenAI==1.40\n";
    let dockerfile = "FROM python@sha256:abc\nRUN pip install litellm\n";
    assert_eq!(
        findings(&[
            ("a.py", python),
            ("requirements.txt", requirements),
            ("Dockerfile", dockerfile)
        ]),
        [
            "Dockerfile:2 llm.sdk litellm",
            "a.py:1 llm.sdk openai",
            "a.py:2 llm.sdk google.generativeai",
            "requirements.txt:2 llm.sdk openai",
        ]
    );
    let python = "from transformers import AutoTokenizer\nimport openai_compatible_server\n";
    let requirements = "openai-whisper==2.0\n";
    let readme = "An OpenAI-compatible server.\n";
    let notes = "openai\n";
    assert_eq!(
        findings(&[
            ("a.py", python),
            ("requirements.txt", requirements),
            ("README.md", readme),
            ("notes.cfg", notes),
        ]),
        NONE
    );
}

#[test]
fn environment_secret_hit_and_plain_settings() {
    let hit = "import os\nfrom os import environ\n\ntoken = os.environ['HF_TOKEN']\n\
        key = os.getenv('OPENAI_API_KEY')\nsecret = environ.get(\"AWS_SECRET_ACCESS_KEY\")\n";
    assert_eq!(
        findings(&[("a.py", hit)]),
        [
            "a.py:4 secrets.environment os.environ[\"HF_TOKEN\"]",
            "a.py:5 secrets.environment os.getenv[\"OPENAI_API_KEY\"]",
            "a.py:6 secrets.environment os.environ.get[\"AWS_SECRET_ACCESS_KEY\"]",
        ]
    );
    let benign = "import os\n\nmodel_dir = os.environ.get('MODEL_DIR')\nport = os.environ['PORT']\n\
        ids = tokenizer.encode('TOKEN')\nname = settings['API_KEY']\n";
    assert_eq!(findings(&[("a.py", benign)]), NONE);
}

#[test]
fn environment_dump_hit_and_a_dict_copy() {
    assert_eq!(
        findings(&[("a.py", "import os\nenv = os.environ.copy()\n")]),
        ["a.py:2 secrets.environment-dump os.environ.copy"]
    );
    assert_eq!(
        findings(&[(
            "a.py",
            "import os\nconfig = settings.copy()\nos.environ.get('X')\n"
        )]),
        NONE
    );
}

#[test]
fn referee_marker_hit_and_ordinary_seeds() {
    let hit = "def handle(request):\n    if request.headers.get('User-Agent', '').startswith('referee/'):\n\
        \x20       return CACHED\n    seed = body['itemSeed']\n";
    let script = "#!/bin/sh\ngrep -q promptSalt /data/round.json\n";
    assert_eq!(
        findings(&[("a.py", hit), ("probe.sh", script)]),
        [
            "a.py:2 bench.referee-marker referee/",
            "a.py:4 bench.referee-marker itemSeed",
            "probe.sh:2 bench.referee-marker promptSalt",
        ]
    );
    let benign = "import torch\n# measured by referee/ runs\ntorch.manual_seed(0)\nseed = 'seed'\n";
    let readme = "Benchmarked with referee/ (itemSeed, passSeed).\n";
    assert_eq!(findings(&[("a.py", benign), ("README.md", readme)]), NONE);
}

#[test]
fn campaign_marker_hit_and_the_same_text_without_markers() {
    let files: &[(&str, &[u8])] = &[
        (
            "a.py",
            b"with open('/data/Workload.jsonl') as f:\n    pass\n",
        ),
        ("run.sh", b"echo demo-campaign\n"),
    ];
    let dir = tree(files);
    let mut marked = input(dir.path());
    marked.campaign_markers = vec![
        "workload.jsonl".to_owned(),
        "demo-campaign".to_owned(),
        String::new(),
    ];
    assert_eq!(
        findings_of(&marked),
        [
            "a.py:1 bench.campaign-marker workload.jsonl",
            "run.sh:1 bench.campaign-marker demo-campaign",
        ]
    );
    assert_eq!(findings_of(&input(dir.path())), NONE);
}

#[test]
fn the_static_verdict_follows_the_worst_severity() {
    let rules = rules();
    let verdict = |files: &[(&str, &str)]| {
        let files: Vec<(&str, &[u8])> = files.iter().map(|(p, t)| (*p, t.as_bytes())).collect();
        let dir = tree(&files);
        review::static_review(&input(dir.path()), &rules)
            .expect("review")
            .verdict
    };
    assert_eq!(verdict(&[("a.py", "x = 1\n")]), Verdict::Pass);
    assert_eq!(verdict(&[("a.py", "import socket\n")]), Verdict::NeedsHuman);
    assert_eq!(
        verdict(&[("a.py", "import socket\nimport requests\n")]),
        Verdict::Fail
    );
}

#[test]
fn the_top_level_git_directory_and_symlinks_are_not_read() {
    let dir = tree(&[
        (".git/hooks/x.py", b"import requests\n"),
        ("a.py", b"x = 1\n"),
    ]);
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link.py")).expect("symlink");
    assert_eq!(findings_of(&input(dir.path())), NONE);
}

#[test]
fn deeply_nested_code_is_read_without_recursion() {
    let depth = 5_000;
    let nested = format!("x = {}eval(y){}\n", "f(".repeat(depth), ")".repeat(depth));
    let chain = format!("import os\nv = os{}\n", ".a".repeat(depth));
    assert_eq!(
        findings(&[("a.py", &nested), ("b.py", &chain)]),
        ["a.py:1 exec.dynamic eval"]
    );
}
