//! The workflow's tests: GitHub's schema (check-jsonschema: a SKIP when it
//! cannot be installed, a failure under `CI=true`) and every `cargo xtask …`
//! line of its `run:` steps parsed by manarig's real command line.

use super::*;
use clap::Parser;
use std::collections::BTreeMap;
use yaml_rust2::{Yaml, YamlLoader};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn workflow() -> Yaml {
    let path = workspace().join(WORKFLOW);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{WORKFLOW}: {e}")).remove(0)
}

/// The installed validator, or `None` (and a SKIP line saying why) when it
/// cannot be installed here; under `CI=true` that is a failure.
fn tool() -> Option<PathBuf> {
    let cache = harness::provision::cache_dir(None).expect("cache folder");
    match validator(&cache, &mut |l| eprintln!("{l}")) {
        Ok(t) => Some(t),
        Err(e) => {
            let why = format!("SKIP: the workflow schema check needs {CHECK_JSONSCHEMA_PIN} from PyPI: {e}");
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{why} (CI=true: a missing tool fails)");
            eprintln!("{why}");
            None
        }
    }
}

#[test]
fn workflow_matches_githubs_schema() {
    let Some(tool) = tool() else { return };
    if let Err(e) = validate(&tool, &workspace().join(WORKFLOW)) {
        panic!("{WORKFLOW}: {e}");
    }
}

/// The check bites: a job with a misspelt key (`runs_on`) and a step with
/// neither `run` nor `uses` are refused.
#[test]
fn schema_check_refuses_a_broken_workflow() {
    let Some(tool) = tool() else { return };
    let text = std::fs::read_to_string(workspace().join(WORKFLOW)).expect("workflow");
    let dir = tempfile::tempdir().expect("temporary folder");
    for (what, broken) in [
        ("runs_on", text.replacen("    runs-on: ubuntu-latest", "    runs_on: ubuntu-latest", 1)),
        ("a step without run or uses", text.replacen("      - uses: actions/checkout@v4", "      - name: nothing", 1)),
    ] {
        assert_ne!(broken, text, "{what}: the workflow changed, update this test");
        let file = dir.path().join("broken.yml");
        std::fs::write(&file, broken).expect("write");
        match validate(&tool, &file) {
            Err(WorkflowCheckError::Invalid(m)) => assert!(m.contains("jobs"), "{what}: {m}"),
            other => panic!("{what}: expected Invalid, got {other:?}"),
        }
    }
}

/// The value of one `${{ … }}` expression of the workflow: `a || b || …`
/// gives its first non-empty term (GitHub's `||` on strings); a term is a
/// quoted literal, `inputs.NAME` (from `inputs`, empty when not given),
/// `github.run_id`, `github.run_attempt` or `matrix.shard`.
fn eval(expr: &str, inputs: &BTreeMap<&str, &str>, shard: Option<u32>) -> String {
    let term = |t: &str| -> String {
        let t = t.trim();
        if let Some(lit) = t.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
            lit.to_string()
        } else if let Some(name) = t.strip_prefix("inputs.") {
            inputs.get(name).copied().unwrap_or_default().to_string()
        } else {
            match t {
                "github.run_id" => "4242".into(),
                "github.run_attempt" => "1".into(),
                "matrix.shard" => shard.expect("matrix.shard outside the shard job").to_string(),
                _ => panic!("{WORKFLOW}: this test does not know the expression `{t}`: teach eval()"),
            }
        }
    };
    let values: Vec<String> = expr.split("||").map(term).collect();
    values.iter().find(|v| !v.is_empty()).cloned().unwrap_or_default()
}

/// `text` with every `${{ … }}` replaced by its value ([`eval`]).
fn substitute(text: &str, inputs: &BTreeMap<&str, &str>, shard: Option<u32>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("${{") {
        out.push_str(&rest[..i]);
        let end = rest[i..].find("}}").unwrap_or_else(|| panic!("{WORKFLOW}: unclosed ${{{{ in {text:?}"));
        out.push_str(&eval(&rest[i + 3..i + end], inputs, shard));
        rest = &rest[i + end + 2..];
    }
    out.push_str(rest);
    out
}

/// The argument vectors (after `cargo`) of every `cargo` call of a `run:`
/// script, found by running the script in bash (as GitHub does: `bash -e
/// -o pipefail`) with `cargo` a shell function that records its arguments.
fn cargo_calls(script: &str, env: &BTreeMap<String, String>) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().expect("temporary folder");
    let log = dir.path().join("argv");
    let stub = "cargo() { for a in \"$@\"; do printf '%s\\0' \"$a\" >> \"$ARGV_LOG\"; done; printf '\\036\\0' >> \"$ARGV_LOG\"; }\n";
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-e", "-o", "pipefail", "-c"])
        .arg(format!("{stub}{script}"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env)
        .env("ARGV_LOG", &log)
        .env("GITHUB_STEP_SUMMARY", dir.path().join("summary"))
        .current_dir(dir.path())
        .output()
        .expect("bash");
    assert!(out.status.success(), "the step failed in bash: {}\n{script}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let mut calls = Vec::new();
    let mut call = Vec::new();
    for word in text.split('\0').filter(|w| !w.is_empty()) {
        if word == "\u{1e}" {
            calls.push(std::mem::take(&mut call));
        } else {
            call.push(word.to_string());
        }
    }
    calls
}

/// Parse `cargo xtask ARGS…` with the real command line: xtask's own
/// subcommands (`test`, `lint`, `fuzz`, `bench`) take free arguments, every
/// other one is the harness's [`harness::cli::Cli`].
fn parse_xtask(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        None => Err("`cargo xtask` without a subcommand".into()),
        Some("test" | "lint" | "fuzz" | "bench") => Ok(()),
        Some(_) => {
            harness::cli::Cli::try_parse_from(std::iter::once("cargo xtask".to_string()).chain(args.iter().cloned()))
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
    }
}

/// The workflow's `shard` list (`jobs.shard.strategy.matrix.shard`).
fn shard_list(wf: &Yaml) -> Vec<i64> {
    wf["jobs"]["shard"]["strategy"]["matrix"]["shard"]
        .as_vec()
        .expect("jobs.shard.strategy.matrix.shard is a list")
        .iter()
        .map(|y| y.as_i64().expect("a shard is a number"))
        .collect()
}

#[test]
fn shards_env_equals_the_shard_list() {
    let wf = workflow();
    let shards: usize =
        wf["env"]["SHARDS"].as_str().expect("env.SHARDS is a string").parse().expect("SHARDS is a number");
    let list = shard_list(&wf);
    assert_eq!(list.len(), shards, "env.SHARDS must equal the length of jobs.shard.strategy.matrix.shard");
    let want: Vec<i64> = (1..=i64::try_from(shards).expect("SHARDS")).collect();
    assert_eq!(list, want, "the shard list must be 1..=SHARDS (matrix --shard K/N takes K in 1..=N)");
    // The job's name says K/N too: N from the matrix itself, not a second copy of SHARDS.
    let name = wf["jobs"]["shard"]["name"].as_str().expect("jobs.shard.name");
    assert!(
        name.contains("${{ strategy.job-total }}"),
        "jobs.shard.name {name:?} should count shards with strategy.job-total"
    );
}

#[test]
fn every_cargo_xtask_line_parses_with_manarigs_cli() {
    let wf = workflow();
    let shards = shard_list(&wf);
    let dispatch = BTreeMap::from([
        ("kernels", "6.12-min,7.x-min"),
        ("topologies", "topologies/two-nics-small.toml topologies/scen-cpu-hotplug.toml"),
        ("source", "debian:linux-source-6.12"),
        ("patches", "examples/patches"),
    ]);
    let mut checked = BTreeMap::<String, usize>::new();
    for inputs in [BTreeMap::new(), dispatch] {
        let env: BTreeMap<String, String> = wf["env"]
            .as_hash()
            .expect("a top-level env")
            .iter()
            .map(|(k, v)| {
                let k = k.as_str().expect("env key").to_string();
                let v = v.as_str().unwrap_or_else(|| panic!("env.{k} is not a string (quote it)"));
                (k, substitute(v, &inputs, None))
            })
            .collect();
        for (job, body) in wf["jobs"].as_hash().expect("jobs") {
            let job = job.as_str().expect("job id");
            let shard_values: Vec<Option<u32>> = if job == "shard" {
                shards.iter().map(|&s| Some(u32::try_from(s).expect("shard"))).collect()
            } else {
                vec![None]
            };
            for step in body["steps"].as_vec().expect("steps") {
                // Only the steps that call cargo run here (not the apt-get ones).
                let Some(run) = step["run"].as_str().filter(|r| r.contains("cargo ")) else { continue };
                for &shard in &shard_values {
                    let script = substitute(run, &inputs, shard);
                    for call in cargo_calls(&script, &env) {
                        let Some(("xtask", rest)) = call.split_first().map(|(a, r)| (a.as_str(), r)) else {
                            panic!("job {job}: `cargo {}` is not a `cargo xtask` command", call.join(" "));
                        };
                        if let Err(e) = parse_xtask(rest) {
                            panic!(
                                "job {job}, step {:?}: `cargo {}` does not parse:\n{e}",
                                step["name"].as_str(),
                                call.join(" ")
                            );
                        }
                        *checked.entry(format!("{job}: {}", rest[0])).or_default() += 1;
                    }
                }
            }
        }
    }
    // Both variants (default inputs, a dispatched patch series): prepare runs
    // setup + matrix, each shard setup + matrix, merge matrix-merge.
    let n = shards.len() * 2;
    let want = BTreeMap::from([
        ("merge: matrix-merge".to_string(), 2),
        ("prepare: matrix".to_string(), 2),
        ("prepare: setup".to_string(), 2),
        ("shard: matrix".to_string(), n),
        ("shard: setup".to_string(), n),
    ]);
    assert_eq!(checked, want, "the cargo xtask commands found in the workflow");
}
