//! The file viewer with SWE-agent v0 semantics: `open`, `goto`, `scroll_up`, `scroll_down` and
//! `create`, as pure functions of the viewer state and the file's bytes. The maths copies v0's
//! `_constrain_line` and `_print` (jq floats included), so observations match published
//! trajectories byte for byte. Callers read files and probe paths; see [`probe_command`].

use super::args::{shlex_quote, split_words};

/// The message every viewer command prints when no file is open.
pub const NO_FILE_OPEN: &str = "No file open. Use the open command first.";

/// What `create` writes to a new file (v0 writes a single newline).
pub const CREATE_CONTENT: &[u8] = b"\n";

/// From this many scrolls in a row on, a scroll appends the v0.7 inefficiency warning.
pub const SCROLL_WARNING_AFTER: usize = 3;

pub use crate::config::aci::DEFAULT_MAX_LINE_LENGTH;

/// What ends a line cut at the window's width: how many characters are not shown.
pub fn cut_marker(hidden_chars: usize) -> String {
    format!(" [... {hidden_chars} more characters on this line]")
}

/// The file v0 sourced its viewer commands from, as bash names it in an error of theirs.
const V0_DEFAULTS_SH: &str = "/root/commands/defaults.sh";

/// The line of [`V0_DEFAULTS_SH`] (v0.1 to v0.7 alike) where `open` compares its line number
/// with the file's line count: `if [ $2 -gt $max_line ]; then`.
const V0_OPEN_COMPARE_LINE: usize = 54;

/// What v0's `open "<path>" <line>` printed on stderr before its answer when `<path>` is not a
/// file: mawk's failure to count the lines (`awk 'END {print NR}' $1`), then bash's error for
/// the comparison with the empty count. Nothing for a file.
pub fn open_shell_noise(path: &str, line: &str, target: &PathKind) -> Vec<String> {
    let awk = match target {
        PathKind::File { .. } => return Vec::new(),
        PathKind::Directory => "awk: read error (Is a directory)".to_owned(),
        PathKind::Missing => format!("awk: cannot open {path} (No such file or directory)"),
    };
    vec![
        awk,
        format!(
            "{V0_DEFAULTS_SH}: line {V0_OPEN_COMPARE_LINE}: [: {line}: unary operator expected"
        ),
    ]
}

/// The viewer state that v0 kept in shell variables (`CURRENT_FILE`, `CURRENT_LINE`, `WINDOW`,
/// `OVERLAP`, `SCROLL_COUNT`, `LAST_ACTION`). Cloning it before an edit and restoring it afterwards is the
/// exact rollback of the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowState {
    /// The open file as an absolute, symlink-resolved path (v0 `realpath`), if any.
    pub file: Option<String>,
    /// v0 `CURRENT_LINE`: the 1-based centre of the window, already constrained.
    pub current_line: usize,
    /// Whether v0's `CURRENT_LINE` is `current_line + 0.5`. v0 computes with jq floats, and an
    /// odd `window` makes `open` without a line put the centre at `window / 2 = k.5`; that
    /// half then survives scrolling. Always `false` for an even window.
    pub current_line_half: bool,
    /// v0 `WINDOW`: how many lines are shown (100 by default; may be huge for a full-file view).
    pub window: usize,
    /// v0 `OVERLAP`: how many lines a scroll keeps from the previous view (2 by default).
    pub overlap: usize,
    /// v0.7 `SCROLL_COUNT`: scrolls since the count was last reset.
    pub consecutive_scrolls: usize,
    /// Whether v0.7's `LAST_ACTION`, the previous action as a whole, was exactly `scroll_up`
    /// or `scroll_down`; see [`WindowState::end_action`].
    pub last_action_scrolled: bool,
    /// Whether scrolling warns from the [`SCROLL_WARNING_AFTER`]th scroll in a row on (v0.7;
    /// earlier versions never warn).
    pub scroll_warning: bool,
    /// The widest line shown, in characters ([`DEFAULT_MAX_LINE_LENGTH`]); longer lines are
    /// cut with [`cut_marker`].
    pub max_line_length: usize,
    /// Whether `open` with a line number prints v0's shell noise for a path that is not a
    /// file ([`open_shell_noise`]).
    pub open_shell_noise: bool,
}

/// The arguments of `open "<path>" [<line_number>]` after the usage checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRequest {
    /// The path as typed (relative to the shell's working directory, or absolute).
    pub path: String,
    /// The line number as typed (only ASCII digits), if one was given.
    pub line: Option<String>,
}

/// What a path is inside the sandbox; [`parse_probe`] reads it from [`probe_command`]'s output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathKind {
    /// A regular file (or a symlink to one), with its `realpath`.
    File {
        /// The absolute, symlink-resolved path: what the header shows.
        abs_path: String,
    },
    /// A directory.
    Directory,
    /// Nothing there (or nothing readable).
    Missing,
}

impl WindowState {
    /// A viewer with no file open.
    pub fn new(window: usize, overlap: usize) -> Self {
        Self {
            file: None,
            current_line: 0,
            current_line_half: false,
            window,
            overlap,
            consecutive_scrolls: 0,
            last_action_scrolled: false,
            scroll_warning: true,
            max_line_length: DEFAULT_MAX_LINE_LENGTH,
            open_shell_noise: false,
        }
    }

    /// What the trajectory state records as `open_file`: the open file or `n/a`.
    pub fn open_file_or_na(&self) -> &str {
        self.file.as_deref().unwrap_or("n/a")
    }

    /// Sets the scroll count to 0.
    pub fn reset_scrolls(&mut self) {
        self.consecutive_scrolls = 0;
    }

    /// Records that `action` (a whole model action, every sub-action run) was executed, as
    /// v0.7 exports it as `LAST_ACTION` afterwards. Each scroll resets the count first unless
    /// the previous action was exactly `scroll_up` or `scroll_down`: so the warning comes from
    /// the 3rd scroll action in a row, and scrolls within one action count only when the
    /// action before was a scroll.
    pub fn end_action(&mut self, action: &str) {
        self.last_action_scrolled = matches!(action.trim(), "scroll_up" | "scroll_down");
    }

    /// The current window of the open file (`bytes` are its contents), as v0's `_print`
    /// shows it; `None` when no file is open.
    pub fn render(&self, bytes: &[u8]) -> Option<String> {
        let path = self.file.as_deref()?;
        Some(render_view(
            path,
            &split_lines(bytes),
            self.centre2(),
            to_i128(self.window),
            self.max_line_length,
        ))
    }

    /// `open`: `target` is what [`probe_command`] found at `request.path`, and `bytes` the
    /// file's contents when it is a file (ignored otherwise). Prints the v0 clamping warnings,
    /// then the window or the error.
    pub fn open(&mut self, request: &OpenRequest, target: &PathKind, bytes: &[u8]) -> String {
        let window = to_i128(self.window);
        let mut out = Vec::new();
        // v0 counts lines with `awk … $1` before checking the path; mawk fails on a directory
        // or a missing file, and then only the "less than 1" check can fire.
        let lines = split_lines(bytes);
        let known_lines = matches!(target, PathKind::File { .. }).then_some(lines.len());
        if let Some(line) = request.line.as_deref().filter(|_| self.open_shell_noise) {
            out.extend(open_shell_noise(&request.path, line, target));
        }
        let centre2 = match &request.line {
            None => window,
            Some(raw) => {
                let line = parse_decimal(raw);
                match known_lines {
                    Some(total) if line > to_i128(total) => {
                        out.push(format!(
                            "Warning: <line_number> ({raw}) is greater than the number of lines in the file ({total})"
                        ));
                        out.push(format!("Warning: Setting <line_number> to {total}"));
                        2 * to_i128(total)
                    }
                    _ if line < 1 => {
                        out.push(format!("Warning: <line_number> ({raw}) is less than 1"));
                        out.push("Warning: Setting <line_number> to 1".to_owned());
                        2
                    }
                    _ => placement(line, window),
                }
            }
        };
        match target {
            PathKind::File { abs_path } => {
                self.file = Some(abs_path.clone());
                self.set_centre2(constrain(centre2, window, lines.len()));
                out.push(render_view(
                    abs_path,
                    &lines,
                    self.centre2(),
                    window,
                    self.max_line_length,
                ));
            }
            PathKind::Directory => out.push(format!(
                "Error: {} is a directory. You can only open files. Use cd or ls to navigate directories.",
                request.path
            )),
            PathKind::Missing => out.push(format!("File {} not found", request.path)),
        }
        out.join("\n")
    }

    /// `goto <line_number>`: `args` is the text after the command name and `bytes` the open
    /// file's contents (pass an empty slice when no file is open).
    pub fn goto(&mut self, args: &str, bytes: &[u8]) -> String {
        let words = split_words(args);
        if words.len() > 1 {
            return "goto allows only one line number at a time.".to_owned();
        }
        let Some(path) = self.file.clone() else {
            return NO_FILE_OPEN.to_owned();
        };
        let arg = words.first().map_or("", String::as_str);
        if arg.is_empty() {
            return "Usage: goto <line>".to_owned();
        }
        if !is_digits(arg) {
            return "Usage: goto <line>\nError: <line> must be a number".to_owned();
        }
        let lines = split_lines(bytes);
        if parse_decimal(arg) > to_i128(lines.len()) {
            return format!(
                "Error: <line> must be less than or equal to {}",
                lines.len()
            );
        }
        let window = to_i128(self.window);
        self.set_centre2(constrain(
            placement(parse_decimal(arg), window),
            window,
            lines.len(),
        ));
        render_view(&path, &lines, self.centre2(), window, self.max_line_length)
    }

    /// `scroll_down`: moves the centre down by `window - overlap`; `bytes` as for
    /// [`WindowState::goto`].
    pub fn scroll_down(&mut self, bytes: &[u8]) -> String {
        self.scroll(bytes, 1)
    }

    /// `scroll_up`: moves the centre up by `window - overlap`; `bytes` as for
    /// [`WindowState::goto`].
    pub fn scroll_up(&mut self, bytes: &[u8]) -> String {
        self.scroll(bytes, -1)
    }

    fn scroll(&mut self, bytes: &[u8], direction: i128) -> String {
        let Some(path) = self.file.clone() else {
            return NO_FILE_OPEN.to_owned();
        };
        let lines = split_lines(bytes);
        let window = to_i128(self.window);
        let step2 = 2 * direction * (window - to_i128(self.overlap));
        self.set_centre2(constrain(self.centre2() + step2, window, lines.len()));
        let view = render_view(&path, &lines, self.centre2(), window, self.max_line_length);
        if !self.last_action_scrolled {
            self.reset_scrolls();
        }
        self.consecutive_scrolls = self.consecutive_scrolls.saturating_add(1);
        if !self.scroll_warning || self.consecutive_scrolls < SCROLL_WARNING_AFTER {
            return view;
        }
        format!(
            "{view}\n\nWARNING: Scrolling many times in a row is very inefficient.\n\
             If you know what you are looking for, use `search_file <pattern>` instead.\n"
        )
    }

    /// `create <filename>`: `existed` says whether the path existed before (then nothing was
    /// written), `target` and `bytes` are as for [`WindowState::open`] after the write.
    pub fn create(
        &mut self,
        filename: &str,
        existed: bool,
        target: &PathKind,
        bytes: &[u8],
    ) -> String {
        let request = OpenRequest {
            path: filename.to_owned(),
            line: None,
        };
        let opened = self.open(&request, target, bytes);
        if existed {
            format!("Error: File '{filename}' already exists.\n{opened}")
        } else {
            opened
        }
    }

    /// Twice v0's `CURRENT_LINE` (v0 can hold a half).
    pub(crate) fn centre2(&self) -> i128 {
        2 * to_i128(self.current_line) + i128::from(self.current_line_half)
    }

    pub(crate) fn set_centre2(&mut self, centre2: i128) {
        let centre2 = centre2.max(0);
        self.current_line = usize::try_from(centre2 / 2).unwrap_or(usize::MAX);
        self.current_line_half = centre2 % 2 == 1;
    }
}

/// Parses the arguments of `open` with bash word splitting (quotes optional, as paper-era
/// trajectories omit them). `Err` is the v0.7 usage observation.
pub fn parse_open_args(args: &str) -> Result<OpenRequest, String> {
    let mut words = split_words(args).into_iter();
    let path = words.next().unwrap_or_default();
    if path.is_empty() {
        return Err("Usage: open \"<file>\"".to_owned());
    }
    let line = words.next().filter(|line| !line.is_empty());
    if let Some(line) = &line
        && !is_digits(line)
    {
        return Err(
            "Usage: open \"<file>\" [<line_number>]\nError: <line_number> must be a number"
                .to_owned(),
        );
    }
    Ok(OpenRequest { path, line })
}

/// Parses the argument of `create`; `Err` is the v0 usage observation.
pub fn parse_create_args(args: &str) -> Result<String, String> {
    match split_words(args).into_iter().next() {
        Some(filename) if !filename.is_empty() => Ok(filename),
        _ => Err("Usage: create <filename>".to_owned()),
    }
}

/// A bash command that reports what `path` is and, for a file, prints its bytes, so `open`
/// costs one exchange with the sandbox; feed its stdout to [`parse_probe`]. It runs in a
/// subshell of the session, so relative paths resolve against the session's directory.
pub fn probe_command(path: &str) -> String {
    format!("( {} ) 2>/dev/null", probe_script(path))
}

fn probe_script(path: &str) -> String {
    // The path printed is what `realpath` prints; for a file that is not a symlink it is found
    // with builtins (`cd -P` into its directory, and back), which saves running a program.
    format!(
        "p={}; if [ -f \"$p\" ]; then printf 'file\\0'; if [ -L \"$p\" ]; then realpath -- \"$p\"; \
         else o=$PWD; case $p in */*) CDPATH= cd -P -- \"${{p%/*}}/\";; *) CDPATH= cd -P .;; esac \
         && printf '%s/%s\\n' \"${{PWD%/}}\" \"${{p##*/}}\"; cd -- \"$o\"; fi; printf '\\0'; \
         cat -- \"$p\"; elif [ -d \"$p\" ]; then printf 'dir\\0'; else printf 'missing\\0'; fi",
        shlex_quote(&path_argument(path))
    )
}

/// Reads the output of [`probe_command`] (or the tail of [`create_command`]'s): what the path
/// is and, for a file, the bytes printed after its `realpath`. The bytes are cut short when
/// the sandbox capped the command's output; the caller then reads the file instead.
pub fn parse_probe(stdout: &[u8]) -> (PathKind, &[u8]) {
    if let Some(rest) = stdout.strip_prefix(b"file\0") {
        let nul = rest
            .iter()
            .position(|&byte| byte == 0)
            .unwrap_or(rest.len());
        let path = &rest[..nul];
        let abs_path = String::from_utf8_lossy(path.strip_suffix(b"\n").unwrap_or(path));
        if !abs_path.is_empty() {
            let kind = PathKind::File {
                abs_path: abs_path.into_owned(),
            };
            return (kind, rest.get(nul + 1..).unwrap_or_default());
        }
    } else if stdout.starts_with(b"dir\0") {
        return (PathKind::Directory, b"");
    }
    (PathKind::Missing, b"")
}

/// A bash command that does `create`'s file work as v0 does (`printf "\n" > file` unless the
/// path exists; no parent directories are made) and then probes the path and prints the file,
/// all in one exchange. Feed its stdout to [`parse_create_output`].
pub fn create_command(filename: &str) -> String {
    format!(
        "( f={}; if [ -e \"$f\" ]; then printf 'exists\\0'; else printf 'created\\0'; \
         printf '\\n' > \"$f\"; fi; {} ) 2>/dev/null",
        shlex_quote(&path_argument(filename)),
        probe_script(filename)
    )
}

/// Reads [`create_command`]'s output: whether the path already existed, what is there now,
/// and (for a file) its bytes, as [`parse_probe`] reads them.
pub fn parse_create_output(stdout: &[u8]) -> (bool, PathKind, &[u8]) {
    let (existed, rest) = match stdout.strip_prefix(b"exists\0") {
        Some(rest) => (true, rest),
        None => (false, stdout.strip_prefix(b"created\0").unwrap_or(stdout)),
    };
    let (kind, content) = parse_probe(rest);
    (existed, kind, content)
}

/// Prefixes `./` to a path that starts with `-`, so that no tool reads it as an option.
pub(crate) fn path_argument(path: &str) -> String {
    if path.starts_with('-') {
        format!("./{path}")
    } else {
        path.to_owned()
    }
}

/// Splits file contents into lines as `awk`/`mapfile -t` do: on `\n` only (a `\r` stays in
/// the line), a last line without a newline still counts, and an empty file has none.
pub fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = bytes.split(|&byte| byte == b'\n').collect();
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        lines.pop();
    }
    lines
}

/// The number of lines `awk 'END {print NR}'` reports.
pub fn count_lines(bytes: &[u8]) -> usize {
    let newlines = bytes.iter().filter(|&&byte| byte == b'\n').count();
    newlines + usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n"))
}

fn is_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())
}

/// Parses decimal digits, saturating instead of overflowing (bash would wrap or fail).
pub(crate) fn parse_decimal(text: &str) -> i128 {
    text.bytes()
        .filter(u8::is_ascii_digit)
        .fold(0_i128, |value, digit| {
            value
                .saturating_mul(10)
                .saturating_add(i128::from(digit - b'0'))
        })
        .min(i128::from(u64::MAX))
}

pub(crate) fn to_i128(value: usize) -> i128 {
    i128::try_from(value).unwrap_or(i128::MAX)
}

/// One line of a window: decoded as [`super::observation::decode`] does, and when it has more
/// than `max_chars` characters, its first `max_chars` and the [`cut_marker`]. Only the shown
/// part is decoded into a new string, so a line of hundreds of megabytes costs a scan, not a
/// copy.
pub(crate) fn cut_line(line: &[u8], max_chars: usize) -> String {
    // A line of at most `max_chars` bytes has at most that many characters.
    if line.len() <= max_chars {
        return super::observation::decode(line);
    }
    let mut shown = 0;
    let mut end = 0;
    let mut total = 0;
    for chunk in line.utf8_chunks() {
        // Each invalid byte is one `\xNN`, counted as one character of the line.
        for c in chunk.valid().chars() {
            if shown < max_chars {
                shown += 1;
                end += c.len_utf8();
            }
            total += 1;
        }
        for _ in chunk.invalid() {
            if shown < max_chars {
                shown += 1;
                end += 1;
            }
            total += 1;
        }
    }
    if total <= max_chars {
        return super::observation::decode(line);
    }
    let mut out = super::observation::decode(&line[..end]);
    out.push_str(&cut_marker(total - max_chars));
    out
}

/// v0's centre for a target line `line`: `floor(max(line + WINDOW/2 - floor(WINDOW/6), 1))`,
/// doubled.
pub(crate) fn placement(line: i128, window: i128) -> i128 {
    let doubled = 2 * line + window - 2 * window.div_euclid(6);
    if doubled < 2 {
        2
    } else {
        2 * doubled.div_euclid(2)
    }
}

/// v0's `_constrain_line` on a doubled centre: `max(min(c, N - floor(W/2)), floor(W/2))`.
pub(crate) fn constrain(centre2: i128, window: i128, total: usize) -> i128 {
    let half = window.div_euclid(2);
    centre2.min(2 * (to_i128(total) - half)).max(2 * half)
}

/// v0's `_print` for a doubled centre and a window (which the lint view may make odd or even
/// negative): the header, `(A more lines above)`, `grep -n $ | head -n X | tail -n W`, and
/// `(B more lines below)`, joined with `\n`. Lines are decoded as v0 decodes its shell's output
/// ([`super::observation::decode`]) and cut at `max_line` characters ([`cut_line`]); the
/// caller normalises line breaks.
pub(crate) fn render_view(
    path: &str,
    lines: &[&[u8]],
    centre2: i128,
    window: i128,
    max_line: usize,
) -> String {
    let total = to_i128(lines.len());
    let mut out = format!("[File: {path} ({total} lines total)]");
    let above2 = centre2 - window;
    if above2 >= 2 {
        out.push_str(&format!("\n({} more lines above)", above2.div_euclid(2)));
    }
    // `head -n X` with a negative X prints all but the last |X| lines; `tail -n -K` is
    // `tail -n K`.
    let head_count = (centre2 + window).max(window).div_euclid(2);
    let head = if head_count >= 0 {
        head_count.min(total)
    } else {
        (total + head_count).max(0)
    };
    let first = (head - window.abs()).max(0);
    let shown = lines
        .iter()
        .enumerate()
        .skip(usize::try_from(first).unwrap_or(usize::MAX))
        .take(usize::try_from(head - first).unwrap_or(0));
    for (index, line) in shown {
        out.push_str(&format!("\n{}:{}", index + 1, cut_line(line, max_line)));
    }
    let below2 = 2 * total - centre2 - window;
    if below2 > 0 {
        // jq `round` rounds halves up for positive numbers.
        out.push_str(&format!(
            "\n({} more lines below)",
            (below2 + 1).div_euclid(2)
        ));
    }
    out
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
