//! Module-level name checks (F821, F822, F831) assembled from per-unit [`Facts`].
//!
//! A unit is a top-level statement, or one statement of a top-level class body. Units keep
//! their facts across edits: after an incremental re-parse only the units that overlap the
//! edit, or whose byte range no longer matches an old unit, are analysed again.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tree_sitter::Node;

use super::python_scope::{Base, Facts, analyze};
use super::python_tokens::SyntaxProblem;

/// A name-check diagnostic at an absolute 0-based row and byte column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NameDiagnostic {
    pub row: usize,
    pub col: usize,
    pub code: &'static str,
    pub message: String,
}

/// The per-unit analysis of one text.
#[derive(Clone, Debug, Default)]
pub(crate) struct Units {
    units: Vec<Unit>,
}

#[derive(Clone, Debug)]
struct Unit {
    start_byte: usize,
    end_byte: usize,
    start_row: usize,
    body: UnitBody,
}

#[derive(Clone, Debug)]
enum UnitBody {
    Plain(Arc<Facts>),
    Class(Arc<ClassUnit>),
}

#[derive(Debug)]
struct ClassUnit {
    header: Facts,
    members: Vec<Member>,
}

/// One statement of a class body; bytes and rows are relative to the class unit.
#[derive(Clone, Debug)]
struct Member {
    start_byte: usize,
    end_byte: usize,
    row: usize,
    facts: Arc<Facts>,
}

/// What changed between the text of the old [`Units`] and the new text.
pub(crate) struct Change {
    /// Byte where the edit starts (equal in both texts).
    pub start: usize,
    /// End of the replaced bytes in the old text and of the replacement in the new text.
    pub old_end: usize,
    pub new_end: usize,
}

impl Change {
    /// Whether the unit spanning `start..end` of the new text overlaps the replaced lines
    /// (a pure deletion only touches a unit it falls strictly inside).
    fn is_dirty(&self, start: usize, end: usize) -> bool {
        if self.start == self.new_end {
            start < self.start && self.start < end
        } else {
            start < self.new_end && self.start < end
        }
    }

    /// The byte range `start..end` of the new text in the old text's coordinates.
    fn old_range(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        if end <= self.start {
            Some((start, end))
        } else if start >= self.new_end {
            let shift = |byte: usize| (byte + self.old_end).checked_sub(self.new_end);
            Some((shift(start)?, shift(end)?))
        } else {
            None
        }
    }
}

fn named_children<'tree>(node: Node<'tree>) -> Vec<Node<'tree>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .filter(|child| child.kind() != "comment")
        .collect()
}

/// The class definition of a top-level statement, if it is one (decorated or not).
fn class_of(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "class_definition" => Some(node),
        "decorated_definition" => node
            .child_by_field_name("definition")
            .filter(|definition| definition.kind() == "class_definition"),
        _ => None,
    }
}

impl Units {
    /// Analyses every unit of `root`.
    pub(crate) fn build(root: Node<'_>, src: &[u8]) -> Self {
        Self::rebuild(root, src, None)
    }

    /// Analyses the units of `root`, reusing those of `previous` that the change left alone.
    pub(crate) fn rebuild(root: Node<'_>, src: &[u8], previous: Option<(&Units, &Change)>) -> Self {
        let old_units: HashMap<(usize, usize), &Unit> = previous
            .map(|(units, _)| {
                units
                    .units
                    .iter()
                    .map(|u| ((u.start_byte, u.end_byte), u))
                    .collect()
            })
            .unwrap_or_default();
        let old_starts: HashMap<usize, &Unit> = previous
            .map(|(units, _)| units.units.iter().map(|u| (u.start_byte, u)).collect())
            .unwrap_or_default();
        let mut units = Vec::new();
        for node in named_children(root) {
            let (start, end) = (node.start_byte(), node.end_byte());
            let start_row = node.start_position().row;
            let reused = previous.and_then(|(_, change)| {
                if change.is_dirty(start, end) {
                    return None;
                }
                let key = change.old_range(start, end)?;
                old_units.get(&key).map(|old| old.body.clone())
            });
            let body = match reused {
                Some(body) => body,
                None => match class_of(node) {
                    Some(class) => {
                        let old = previous.and_then(|(_, change)| {
                            let (old_start, _) = change.old_range(start, start)?;
                            old_starts
                                .get(&old_start)
                                .copied()
                                .map(|unit| (unit, change))
                        });
                        UnitBody::Class(Arc::new(build_class(node, class, src, old)))
                    }
                    None => UnitBody::Plain(Arc::new(analyze(
                        node,
                        src,
                        Base::Module,
                        start_row,
                        false,
                    ))),
                },
            };
            units.push(Unit {
                start_byte: start,
                end_byte: end,
                start_row,
                body,
            });
        }
        Self { units }
    }

    /// Parser-level problems found by the unit walks (Python 2 `print`, `<>`, ...), with
    /// absolute rows, in no particular order.
    pub(crate) fn syntax_problems(&self) -> Vec<SyntaxProblem> {
        let mut problems = Vec::new();
        for unit in &self.units {
            for_each_facts(unit, |row, facts| {
                problems.extend(facts.syntax.iter().map(|problem| SyntaxProblem {
                    row: problem.row + row,
                    ..problem.clone()
                }));
            });
        }
        problems
    }

    /// F821, F822 and F831 for the whole module.
    pub(crate) fn diagnostics(&self, package_init: bool) -> Vec<NameDiagnostic> {
        let mut module: HashSet<&str> = HashSet::new();
        let (mut star, mut dynamic) = (false, false);
        for unit in &self.units {
            let top = match &unit.body {
                UnitBody::Plain(facts) => facts.as_ref(),
                UnitBody::Class(class) => &class.header,
            };
            module.extend(top.binds.iter().map(String::as_str));
            for_each_facts(unit, |_, facts| {
                module.extend(facts.module_binds.iter().map(String::as_str));
                star |= facts.star_import;
                dynamic |= facts.dynamic;
            });
        }
        if package_init {
            module.insert("__path__");
        }
        let check_names = !star && !dynamic;
        let mut out = Vec::new();
        for unit in &self.units {
            unit_diagnostics(unit, &module, check_names, &mut out);
        }
        if check_names && !package_init {
            self.export_diagnostics(&module, &mut out);
        }
        out
    }

    fn export_diagnostics(&self, module: &HashSet<&str>, out: &mut Vec<NameDiagnostic>) {
        let mut names: Vec<String> = Vec::new();
        let mut last = None;
        for unit in &self.units {
            let UnitBody::Plain(facts) = &unit.body else {
                continue;
            };
            let mut ops: Vec<_> = facts.exports.iter().collect();
            ops.sort_by_key(|op| op.byte);
            for op in ops {
                if !op.extend {
                    names.clear();
                }
                names.extend(op.names.iter().cloned());
                last = Some((unit.start_row + op.row, op.col));
            }
        }
        let Some((row, col)) = last else { return };
        for name in names.iter().filter(|name| !module.contains(name.as_str())) {
            out.push(NameDiagnostic {
                row,
                col,
                code: "F822",
                message: format!("undefined name '{name}' in __all__"),
            });
        }
    }
}

/// Calls `visit` with (absolute row of the facts' origin, facts) for every facts of `unit`.
fn for_each_facts<'a>(unit: &'a Unit, mut visit: impl FnMut(usize, &'a Facts)) {
    match &unit.body {
        UnitBody::Plain(facts) => visit(unit.start_row, facts),
        UnitBody::Class(class) => {
            visit(unit.start_row, &class.header);
            for member in &class.members {
                visit(unit.start_row + member.row, &member.facts);
            }
        }
    }
}

fn undefined(row: usize, col: usize, name: &str) -> NameDiagnostic {
    NameDiagnostic {
        row,
        col,
        code: "F821",
        message: format!("undefined name '{name}'"),
    }
}

/// The scopes a unit's free names are resolved against.
struct Lookup<'a> {
    module: &'a HashSet<&'a str>,
    /// For class members: the class body's bindings and the class's type parameters.
    class: Option<(&'a HashSet<&'a str>, &'a HashSet<&'a str>)>,
    check_names: bool,
}

fn unit_diagnostics(
    unit: &Unit,
    module: &HashSet<&str>,
    check_names: bool,
    out: &mut Vec<NameDiagnostic>,
) {
    let top = Lookup {
        module,
        class: None,
        check_names,
    };
    match &unit.body {
        UnitBody::Plain(facts) => facts_diagnostics(unit.start_row, facts, &top, out),
        UnitBody::Class(class) => {
            facts_diagnostics(unit.start_row, &class.header, &top, out);
            let binds: HashSet<&str> = class
                .members
                .iter()
                .flat_map(|m| m.facts.binds.iter().map(String::as_str))
                .collect();
            let type_params: HashSet<&str> = class
                .header
                .type_params
                .iter()
                .map(String::as_str)
                .collect();
            let lookup = Lookup {
                module,
                class: Some((&binds, &type_params)),
                check_names,
            };
            for member in &class.members {
                facts_diagnostics(unit.start_row + member.row, &member.facts, &lookup, out);
            }
        }
    }
}

fn facts_diagnostics(
    row: usize,
    facts: &Facts,
    lookup: &Lookup<'_>,
    out: &mut Vec<NameDiagnostic>,
) {
    for diagnostic in &facts.diagnostics {
        if diagnostic.code == "F821" && !lookup.check_names {
            continue;
        }
        out.push(NameDiagnostic {
            row: row + diagnostic.row,
            col: diagnostic.col,
            code: diagnostic.code,
            message: diagnostic.message.clone(),
        });
    }
    if !lookup.check_names {
        return;
    }
    for free in &facts.free {
        let name = free.name.as_str();
        let in_class = lookup.class.is_some_and(|(binds, type_params)| {
            (free.class_visible && binds.contains(name)) || type_params.contains(name)
        });
        if !in_class && !lookup.module.contains(name) {
            out.push(undefined(row + free.row, free.col, name));
        }
    }
    let scope = lookup.class.map_or(lookup.module, |(binds, _)| binds);
    for deleted in &facts.deletes {
        if !scope.contains(deleted.name.as_str()) {
            out.push(undefined(row + deleted.row, deleted.col, &deleted.name));
        }
    }
}

/// Analyses a top-level class: its header as a module-level unit and each body statement as
/// a unit of the class scope, reusing the members of `old` (the class unit at the same start)
/// that the change did not touch.
fn build_class(
    node: Node<'_>,
    class: Node<'_>,
    src: &[u8],
    old: Option<(&Unit, &Change)>,
) -> ClassUnit {
    let unit_start = node.start_byte();
    let unit_row = node.start_position().row;
    let header = analyze(node, src, Base::Module, unit_row, true);
    let old_members: HashMap<(usize, usize), &Member> = match old {
        Some((
            Unit {
                body: UnitBody::Class(old_class),
                start_byte,
                ..
            },
            _,
        )) => old_class
            .members
            .iter()
            .map(|m| ((start_byte + m.start_byte, start_byte + m.end_byte), m))
            .collect(),
        _ => HashMap::new(),
    };
    let body = class.child_by_field_name("body");
    let members = body.map(named_children).unwrap_or_default();
    let members = members
        .into_iter()
        .map(|member| {
            let (start, end) = (member.start_byte(), member.end_byte());
            let row = member.start_position().row;
            let reused = old.and_then(|(_, change)| {
                if change.is_dirty(start, end) {
                    return None;
                }
                let key = change.old_range(start, end)?;
                old_members.get(&key).map(|m| Arc::clone(&m.facts))
            });
            let facts =
                reused.unwrap_or_else(|| Arc::new(analyze(member, src, Base::Class, row, false)));
            Member {
                start_byte: start - unit_start,
                end_byte: end - unit_start,
                row: row - unit_row,
                facts,
            }
        })
        .collect();
    ClassUnit { header, members }
}
