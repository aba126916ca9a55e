//! Runs one `str_replace_editor` call on the host as aci runs it in a sandbox, printing what the
//! model would see: `str_replace_editor <command> <path> [--file_text …] [--view_range A B]
//! [--old_str …] [--new_str …] [--insert_line N]`. For a hand-run comparison with SWE-agent
//! 1.x's script, run both on copies of the same files and diff their output and the files
//! (`undo_edit` has no history across calls here; `--filemap` turns on `aci.filemap`).
use std::io::Write;
use std::path::Path;

use aci::aci::str_replace_editor::{self as editor, PathKind};

fn main() {
    let mut words: Vec<String> = std::env::args().skip(1).collect();
    let filemap = words.iter().any(|word| word == "--filemap");
    words.retain(|word| word != "--filemap");
    let (output, failed) = match run(&words, filemap) {
        Ok(text) => (text, false),
        Err(text) => (text, true),
    };
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(output.as_bytes()).is_err() || failed {
        std::process::exit(1);
    }
}

fn run(words: &[String], filemap: bool) -> Result<String, String> {
    let request = editor::parse_args(words)?;
    let path = editor::normalize_path(&request.path);
    let kind = match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => PathKind::Dir,
        Ok(_) => PathKind::File,
        Err(_) => PathKind::Missing,
    };
    let cwd = std::env::current_dir()
        .map(|dir| dir.display().to_string())
        .unwrap_or_default();
    editor::check_path(&request.command, &path, kind, &cwd)?;
    let read = |path: &str| {
        std::fs::read(path)
            .map(|bytes| editor::decode(&bytes))
            .map_err(|error| format!("Ran into {error} while trying to read {path}\n"))
    };
    let write = |path: &str, bytes: &[u8]| {
        std::fs::write(path, bytes)
            .map_err(|error| format!("Ran into {error} while trying to write to {path}\n"))
    };
    match request.command.as_str() {
        "view" if kind == PathKind::Dir => {
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(editor::find_command(&path))
                .output()
                .map_err(|error| error.to_string())?;
            editor::view_dir(
                &path,
                request.view_range,
                &String::from_utf8_lossy(&out.stdout),
                &String::from_utf8_lossy(&out.stderr),
            )
        }
        "view" => {
            let (text, _) = read(&path)?;
            let bodies = filemap.then(|| aci::lint::python_function_bodies(text.as_bytes()));
            editor::view_file(&path, &text, request.view_range, bodies.as_deref())
        }
        "create" => {
            let file_text = request
                .file_text
                .ok_or_else(|| editor::missing_parameter("file_text", "create"))?;
            let parent = editor::parent_path(&path);
            let message = editor::create(&path, Path::new(&parent).is_dir())?;
            write(&path, file_text.as_bytes())?;
            Ok(message)
        }
        "str_replace" | "insert" => {
            let (text, encoding) = read(&path)?;
            let edit = if request.command == "str_replace" {
                let old_str = request
                    .old_str
                    .ok_or_else(|| editor::missing_parameter("old_str", "str_replace"))?;
                editor::str_replace(&path, &text, &old_str, request.new_str.as_deref())?
            } else {
                let line = request
                    .insert_line
                    .ok_or_else(|| editor::missing_parameter("insert_line", "insert"))?;
                let new_str = request
                    .new_str
                    .ok_or_else(|| editor::missing_parameter("new_str", "insert"))?;
                editor::insert(&path, &text, line, &new_str)?
            };
            write(&path, &editor::encode(&edit.text, encoding, &path)?)?;
            Ok(edit.message)
        }
        "undo_edit" => Err(editor::no_history(&path)),
        other => Err(editor::unrecognized_command(other)),
    }
}
