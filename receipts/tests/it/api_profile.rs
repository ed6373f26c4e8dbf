//! `[backend.api]` in a campaign (content/engines.md): absent, a campaign is what it was
//! before profiles existed (same frozen bytes); present, it parses, freezes without
//! floats, round-trips, and its errors name the field.

use receipts::model::*;

const PROCESS: &str = r#"
id = "real"
[model]
name = "tiny"
[baseline]
repo = "baseline"
commit = "0123456789abcdef0123456789abcdef01234567"
[backend]
kind = "process"
command = ["python3", "-m", "llama_cpp.server", "--model", "{tree}/tiny.gguf"]
"#;

#[test]
fn a_process_campaign_without_api_freezes_as_before() {
    let c = Campaign::from_toml("c.toml", PROCESS).unwrap();
    assert_eq!(
        c.backend,
        Backend::Process {
            command: vec![
                "python3".into(),
                "-m".into(),
                "llama_cpp.server".into(),
                "--model".into(),
                "{tree}/tiny.gguf".into()
            ],
            api: None,
            ro_paths: Vec::new(),
        }
    );
    let frozen = FrozenCampaign::freeze(c.clone()).unwrap();
    let json = String::from_utf8(frozen.bytes).unwrap();
    assert!(
        json.contains(r#""backend":{"command":["python3","-m","llama_cpp.server","--model","{tree}/tiny.gguf"],"kind":"process"}"#),
        "{json}"
    );
    assert_eq!(c.api_profile(), ApiProfile::default());
    // The campaign's own token_count still reaches the profile.
    let usage =
        Campaign::from_toml("c.toml", &format!("token_count = \"usage\"\n{PROCESS}")).unwrap();
    assert_eq!(usage.api_profile().token_count, TokenCount::Usage);
}

#[test]
fn an_api_table_parses_freezes_and_round_trips() {
    let text = format!(
        "{PROCESS}[backend.api]\nprofile = \"llama-cpp-python\"\nbos_token_id = 1\n\
         extra = {{ repeat_penalty = 1.0, cache_prompt = false }}\n\
         env = {{ OMP_NUM_THREADS = \"{{threads}}\" }}\n"
    );
    let c = Campaign::from_toml("c.toml", &text).unwrap();
    let p = c.api_profile();
    assert_eq!(p.name, Some(ApiProfileName::LlamaCppPython));
    assert_eq!(p.readiness, ["/v1/models"]);
    assert_eq!(p.token_count, TokenCount::Logprobs);
    assert_eq!(p.bos_token_id, Some(1));
    assert_eq!(p.extra["cache_prompt"], ExtraValue::Bool(false));
    let frozen = FrozenCampaign::freeze(c.clone()).unwrap();
    let json = String::from_utf8(frozen.bytes.clone()).unwrap();
    assert!(
        json.contains(r#""extra":{"cache_prompt":false,"repeat_penalty":{"decimal":"1.0"}}"#),
        "{json}"
    );
    let again = Campaign::from_toml("frozen.toml", &c.to_toml().unwrap()).unwrap();
    assert_eq!(again, c);
    assert_eq!(FrozenCampaign::freeze(again).unwrap().digest, frozen.digest);
    assert_eq!(
        p.record(),
        EngineApi {
            profile: Some(ApiProfileName::LlamaCppPython),
            tested_against_real_server: true,
            token_count: TokenCount::Logprobs,
            token_ids: TokenIds::Tokenizer,
        }
    );
}

#[test]
fn api_errors_name_the_field() {
    let err = |extra: &str| {
        Campaign::from_toml("c.toml", &format!("{PROCESS}[backend.api]\n{extra}\n"))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err("readiness = [\"health\"]"),
        "field `backend.api.readiness` has invalid value `health`: a route starting with `/`"
    );
    assert!(err("tokens = \"x\"").contains("unknown field `tokens`"));
    let disagree = Campaign::from_toml(
        "c.toml",
        &format!("token_count = \"ids\"\n{PROCESS}[backend.api]\nprofile = \"sglang\"\n"),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        disagree,
        "field `token_count` has invalid value `ids`: disagrees with backend.api's token_count \
         (write it once, in [backend.api])"
    );
}

/// Issue 15: the campaign names the scorer's reference runtime. Absent, the frozen
/// campaign has no `reference` key (old campaigns keep their digest) and the reference is
/// the baseline at full precision; `"baseline"` freezes as written and reads back.
#[test]
fn the_reference_runtime_is_named_in_correctness_and_absent_freezes_as_before() {
    let old = FrozenCampaign::freeze(Campaign::from_toml("c.toml", PROCESS).unwrap()).unwrap();
    let json = String::from_utf8(old.bytes.clone()).unwrap();
    assert!(!json.contains("reference"), "{json}");
    let c = Campaign::from_toml("c.toml", PROCESS).unwrap();
    assert_eq!(
        c.correctness.effective_reference(),
        ReferenceRuntime::BaselineFullPrecision
    );
    let named = format!("{PROCESS}[correctness]\nreference = \"baseline\"\n");
    let c = Campaign::from_toml("c.toml", &named).unwrap();
    assert_eq!(
        c.correctness.effective_reference(),
        ReferenceRuntime::Baseline
    );
    assert_eq!(ReferenceRuntime::Baseline.as_str(), "baseline");
    let frozen = FrozenCampaign::freeze(c).unwrap();
    let json = String::from_utf8(frozen.bytes.clone()).unwrap();
    assert!(json.contains(r#""reference":"baseline""#), "{json}");
    assert_ne!(frozen.digest, old.digest);
    let explicit = format!("{PROCESS}[correctness]\nreference = \"baseline-full-precision\"\n");
    assert_eq!(
        Campaign::from_toml("c.toml", &explicit)
            .unwrap()
            .correctness
            .effective_reference(),
        ReferenceRuntime::BaselineFullPrecision
    );
    assert!(
        Campaign::from_toml(
            "c.toml",
            &format!("{PROCESS}[correctness]\nreference = \"teacher\"\n")
        )
        .is_err()
    );
}

/// The llama-cpp-python profile teacher-forces from text: it names the server's
/// detokenizer (`POST /extras/detokenize {"tokens"}` → `{"text"}`) next to its tokenizer.
#[test]
fn the_llama_cpp_python_profile_names_its_detokenizer() {
    let text =
        format!("{PROCESS}[backend.api]\nprofile = \"llama-cpp-python\"\nbos_token_id = 1\n");
    let p = Campaign::from_toml("c.toml", &text).unwrap().api_profile();
    assert!(!p.token_id_prompts);
    assert_eq!(
        p.detokenizer,
        Some(Detokenizer {
            route: "/extras/detokenize".into(),
            field: "tokens".into(),
        })
    );
    // The default (vLLM's, the built-in engine's) is vLLM's `/detokenize`, against which
    // streamed texts are held; sglang and llama-server have none.
    assert_eq!(
        ApiProfile::default().detokenizer,
        Some(Detokenizer {
            route: "/detokenize".into(),
            field: "tokens".into(),
        })
    );
    for name in ["sglang", "llama-server"] {
        let text = format!("{PROCESS}[backend.api]\nprofile = \"{name}\"\n");
        let p = Campaign::from_toml("c.toml", &text).unwrap().api_profile();
        assert_eq!(p.detokenizer, None, "{name}");
    }
}
