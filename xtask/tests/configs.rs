//! Configuration files through the real `xtask check-config`: every file in
//! `tests/configs/` is a mistake a user can make and must fail with exactly the one-line
//! message its first line announces (`# error: <message>`), prefixed with the file path;
//! every shipped configuration under `configs/` must validate.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const XTASK: &str = env!("CARGO_BIN_EXE_xtask");

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn check_config(file: &Path) -> Output {
    Command::new(XTASK)
        .arg("check-config")
        .arg(file)
        .output()
        .expect("xtask runs")
}

fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(toml_files(&path));
        } else if path.extension().is_some_and(|e| e == "toml") {
            files.push(path);
        }
    }
    files.sort();
    files
}

#[test]
fn every_bad_configuration_fails_with_its_exact_message() {
    let files = toml_files(&manifest_dir().join("tests/configs"));
    assert!(
        files.len() >= 12,
        "only {} negative configurations",
        files.len()
    );
    let mut wrong = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        let expected = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# error: "))
            .unwrap_or_else(|| panic!("{}: first line is not `# error: ...`", file.display()));
        let out = check_config(file);
        let want = format!("{}: {expected}\n", file.display());
        let got = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(1) || got != want || !out.stdout.is_empty() {
            wrong.push(format!(
                "{}\n  status {:?}\n  want   {want}  got    {got}",
                file.display(),
                out.status.code()
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// The image path a `[[vm]]` table names, from either spelling of `image`.
fn image_path(vm: &toml::Table) -> &str {
    match &vm["image"] {
        toml::Value::String(s) => s,
        toml::Value::Table(t) => t["path"].as_str().unwrap(),
        other => panic!("image is {other}"),
    }
}

/// Copies `config` into a scratch tree at the same relative place, with every image and
/// initrd it names: the real file when it has been built or prepared, otherwise a small
/// stand-in, so shipped configurations are checked before the guests are built.
fn staged(config: &Path, root: &Path, scratch: &Path) -> PathBuf {
    let copy = scratch.join(config.strip_prefix(root).unwrap());
    let dir = copy.parent().unwrap();
    fs::create_dir_all(dir).unwrap();
    fs::copy(config, &copy).unwrap();
    let table: toml::Table = fs::read_to_string(config).unwrap().parse().unwrap();
    for vm in table["vm"].as_array().unwrap() {
        let vm = vm.as_table().unwrap();
        let initrd = vm.get("initrd").and_then(toml::Value::as_str);
        for file in std::iter::once(image_path(vm)).chain(initrd) {
            let target = dir.join(file);
            fs::create_dir_all(target.parent().unwrap()).unwrap();
            let real = config.parent().unwrap().join(file);
            match fs::read(&real) {
                Ok(bytes) => fs::write(&target, bytes).unwrap(),
                Err(_) => fs::write(&target, [0u8; 4096]).unwrap(),
            }
        }
    }
    copy
}

#[test]
fn every_shipped_configuration_validates() {
    let root = manifest_dir().parent().unwrap();
    let scratch = std::env::temp_dir().join(format!("xtask-configs-{}", std::process::id()));
    let configs = toml_files(&root.join("configs"));
    assert!(!configs.is_empty());
    for config in &configs {
        let out = check_config(&staged(config, root, &scratch));
        assert!(
            out.status.success(),
            "{}: {}",
            config.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn a_missing_file_is_one_line_too() {
    let file = manifest_dir().join("tests/configs/no-such-file.toml");
    let out = check_config(&file);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "{}: cannot read: No such file or directory (os error 2)\n",
            file.display()
        )
    );
}

/// The keys the schema knows, from its `const <SECTION>_KEYS: [&str; N] = [...]` lists.
fn schema_keys() -> Vec<String> {
    let schema = fs::read_to_string(manifest_dir().join("src/config/schema.rs")).unwrap();
    let mut keys = Vec::new();
    let mut rest = schema.as_str();
    while let Some(at) = rest.find("_KEYS: [&str;") {
        let list = &rest[at..];
        let open = list.find("= [").unwrap() + 3;
        let close = list[open..].find("];").unwrap() + open;
        keys.extend(
            list[open..close]
                .split(',')
                .map(|k| k.trim().trim_matches('"').to_string())
                .filter(|k| !k.is_empty()),
        );
        rest = &list[close..];
    }
    keys.sort();
    keys.dedup();
    keys
}

/// The key path a negative file's expected message starts with, split into its names:
/// `vm[0].memory[0].base` gives `vm`, `memory`, `base`.
fn message_key_names(message: &str) -> Vec<String> {
    let path = message.split(':').next().unwrap_or("");
    path.split('.')
        .map(|part| part.split('[').next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn every_configuration_key_has_a_negative_file() {
    let keys = schema_keys();
    assert!(keys.len() >= 20, "schema keys not found: {keys:?}");
    let files = toml_files(&manifest_dir().join("tests/configs"));
    assert!(
        files.len() >= 40,
        "{} negative configurations, fewer than 40",
        files.len()
    );
    let named: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = fs::read_to_string(f).unwrap();
            text.lines()
                .next()
                .and_then(|l| l.strip_prefix("# error: "))
                .map(str::to_string)
        })
        .flat_map(|message| message_key_names(&message))
        .collect();
    let uncovered: Vec<&String> = keys.iter().filter(|k| !named.contains(k)).collect();
    assert!(
        uncovered.is_empty(),
        "keys without a negative configuration naming them: {uncovered:?}"
    );
}
