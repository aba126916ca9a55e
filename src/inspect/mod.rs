//! `aci inspect`: a trajectory and results viewer in the browser, and the same pages as a
//! static site.
//!
//! It reads what `aci batch`/`aci run`, `aci eval` and `aci ablate` write (and SWE-agent's
//! v0.7 and 1.x trajectories) and shows: the run (one row per instance, sortable and
//! filterable, with totals), an instance (turn by turn, windows as a code viewer, edits as
//! diffs with the lint verdict, the final patch, the evaluation's tests and output), and an
//! ablation (the table, a chart of resolve rates with their Wilson intervals, gained and lost
//! instances side by side). Served pages poll for changes, so a running batch updates live.
//!
//! Layout: [`scan`] reads JSON as a stream, [`trajectory`] reads a trajectory once into what
//! the pages show (strings as bounded [`bounded::Text`]s that know where their full text is), so
//! memory does not grow with a file; [`source`] and [`summary`] read the files (cached by
//! modification time and size);
//! [`html`], [`run_page`], [`instance_page`], [`turns`], [`observation`], [`diff`],
//! [`evidence`] (an evaluation's cause, grading evidence and failing tests), [`plots`] (SVG),
//! [`compare_page`] (runs side by side) and [`ablation_page`] turn data into HTML and do no I/O; [`site`] maps page paths to pages and
//! writes the static site; [`server`] is the HTTP edge. Every string from a trajectory is
//! escaped for where it lands, and every page carries a Content-Security-Policy that allows only
//! its own script and style.

pub mod ablation_page;
pub mod bounded;
pub mod compare_page;
pub mod diff;
pub mod evidence;
pub mod html;
pub mod instance_page;
pub mod observation;
pub mod plots;
pub mod run_page;
pub mod scan;
pub mod server;
pub mod site;
pub mod source;
pub mod summary;
pub mod trajectory;
pub mod turns;

pub use site::{InspectError, Mode, Route, Site};
