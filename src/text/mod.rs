//! Text helpers the layers share, one module per job: `{name}` placeholders ([`placeholder`]),
//! literal regular expressions and ANSI escapes ([`pattern`]), Python's line boundaries
//! ([`lines`]), git's C quoting of path names ([`git_quote`]), and the escaping of control
//! characters in every name and message aci prints or logs ([`escape`]), and HTML escaping
//! ([`html`]). Their items are
//! re-exported here.

pub mod escape;
pub mod git_quote;
pub mod html;
pub mod lines;
pub mod pattern;
pub mod placeholder;

pub use escape::{escape_controls, escape_controls_in_lines, safe_name};
pub use git_quote::{c_unescape, git_unquote};
pub use lines::is_python_line_boundary;
pub use pattern::{literal_regex, strip_ansi};
pub use placeholder::{Braces, fill};
