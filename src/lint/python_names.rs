//! Module-level name checks (F821, F822, F831) assembled from per-unit [`Facts`].
//!
//! A unit is a top-level statement, or one statement of a top-level class body. Units keep
//! their facts across edits: after an incremental re-parse only the units that overlap the
//! edit, or whose byte range no longer matches an old unit, are analysed again. The module
//! pass then replays every unit's base-scope events in source order, as pyflakes binds
//! names in order and checks deferred function bodies against the finished module.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tree_sitter::Node;

use super::python_scope::{Base, BaseEvent, Facts, FreeName, analyze};
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

    /// F821, F822 and F831 for the whole module: every unit's base-scope events replayed in
    /// module order (a class unit: its header, its members in the class's scope, then its
    /// name), then the deferred loads against the module as it is at the end.
    pub(crate) fn diagnostics(&self, package_init: bool) -> Vec<NameDiagnostic> {
        let mut exempt: HashSet<&str> = HashSet::new();
        for unit in &self.units {
            for_each_facts(unit, |_, facts| {
                exempt.extend(facts.module_binds.iter().map(String::as_str));
            });
        }
        if package_init {
            exempt.insert("__path__");
        }
        let mut pass = ModulePass::default();
        for unit in &self.units {
            match &unit.body {
                UnitBody::Plain(facts) => pass.unit(unit.start_row, facts, None),
                UnitBody::Class(class) => {
                    pass.unit(unit.start_row, &class.header, None);
                    let type_params: HashSet<String> =
                        class.header.type_params.iter().cloned().collect();
                    let mut scope = ClassScope {
                        binds: HashSet::new(),
                        saved: Vec::new(),
                        type_params,
                    };
                    for member in &class.members {
                        pass.unit(unit.start_row + member.row, &member.facts, Some(&mut scope));
                    }
                    if let Some(name) = &class.header.class_name {
                        pass.bound.insert(name.clone());
                    }
                }
            }
        }
        // pyflakes takes back every undefined-name report for a `global`/`nonlocal` name.
        let mut out: Vec<NameDiagnostic> = pass
            .finish()
            .into_iter()
            .filter(|d| d.name.as_deref().is_none_or(|name| !exempt.contains(name)))
            .map(Pending::into_diagnostic)
            .collect();
        if !pass.star && !package_init {
            let mut defined: HashSet<&str> = pass.bound.iter().map(String::as_str).collect();
            defined.extend(pass.annotated.iter().map(String::as_str));
            defined.extend(exempt.iter().copied());
            self.export_diagnostics(&defined, &mut out);
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

/// A diagnostic of the module pass; `name` is the undefined name of an F821.
struct Pending {
    row: usize,
    col: usize,
    code: &'static str,
    message: String,
    name: Option<String>,
}

impl Pending {
    fn undefined(row: usize, free: &FreeName) -> Self {
        Self {
            row: row + free.row,
            col: free.col,
            code: "F821",
            message: format!("undefined name '{}'", free.name),
            name: Some(free.name.clone()),
        }
    }

    fn into_diagnostic(self) -> NameDiagnostic {
        NameDiagnostic {
            row: self.row,
            col: self.col,
            code: self.code,
            message: self.message,
        }
    }
}

/// A top-level class's scope while its members are replayed.
struct ClassScope {
    binds: HashSet<String>,
    /// For each open `except ... as name:`: whether the name was bound before.
    saved: Vec<bool>,
    type_params: HashSet<String>,
}

/// The module scope as the units' events are replayed in order.
#[derive(Default)]
struct ModulePass<'a> {
    /// What the module binds now.
    bound: HashSet<String>,
    /// Names annotated without a value (`__all__` may list them).
    annotated: HashSet<String>,
    /// A `from module import *` was seen: undefined names are F405, not F821.
    star: bool,
    /// `from __future__ import annotations`: annotations are evaluated last.
    future_annotations: bool,
    /// For each open module-level `except ... as name:`: whether the name was bound before.
    saved: Vec<bool>,
    /// Loads that see the module as it is at its end (their class's type parameters already
    /// checked), with the row of their unit.
    deferred: Vec<(usize, &'a FreeName)>,
    out: Vec<Pending>,
}

impl<'a> ModulePass<'a> {
    /// Replays one unit whose first row is `row`; `class` is the top-level class a member
    /// belongs to.
    fn unit(&mut self, row: usize, facts: &'a Facts, mut class: Option<&mut ClassScope>) {
        for diagnostic in &facts.diagnostics {
            self.out.push(Pending {
                row: row + diagnostic.row,
                col: diagnostic.col,
                code: diagnostic.code,
                message: diagnostic.message.clone(),
                name: None,
            });
        }
        for free in &facts.undefined {
            self.out.push(Pending::undefined(row, free));
        }
        for event in &facts.events {
            self.event(row, event, class.as_deref_mut());
        }
        for free in &facts.deferred {
            if !class
                .as_ref()
                .is_some_and(|class| class.type_params.contains(&free.name))
            {
                self.deferred.push((row, free));
            }
        }
    }

    fn event(&mut self, row: usize, event: &'a BaseEvent, class: Option<&mut ClassScope>) {
        if let BaseEvent::Annotate(name) = event {
            if class.is_none() {
                self.annotated.insert(name.clone());
            }
            return;
        }
        let (binds, saved) = match class {
            Some(class) => {
                if let BaseEvent::Load(free) = event {
                    let seen = (free.class_visible && class.binds.contains(&free.name))
                        || class.type_params.contains(&free.name);
                    if !seen {
                        self.load(row, free);
                    }
                    return;
                }
                (&mut class.binds, &mut class.saved)
            }
            None => {
                if let BaseEvent::Load(free) = event {
                    self.load(row, free);
                    return;
                }
                (&mut self.bound, &mut self.saved)
            }
        };
        match event {
            BaseEvent::Bind(name) => {
                binds.insert(name.clone());
            }
            BaseEvent::Delete(free) => {
                if !binds.remove(&free.name) {
                    self.out.push(Pending::undefined(row, free));
                }
            }
            BaseEvent::ExceptEnter(name) => saved.push(!binds.insert(name.clone())),
            BaseEvent::ExceptExit(name) => {
                if !saved.pop().unwrap_or(false) {
                    binds.remove(name);
                }
            }
            BaseEvent::StarImport => self.star = true,
            BaseEvent::FutureAnnotations => self.future_annotations = true,
            BaseEvent::Load(_) | BaseEvent::Annotate(_) => {}
        }
    }

    /// A load of the module scope at this point of the module.
    fn load(&mut self, row: usize, free: &'a FreeName) {
        if free.annotation && self.future_annotations {
            self.deferred.push((row, free));
        } else if !self.bound.contains(&free.name) && !self.star {
            self.out.push(Pending::undefined(row, free));
        }
    }

    /// The deferred loads, against the module at its end; then everything found.
    fn finish(&mut self) -> Vec<Pending> {
        let deferred = std::mem::take(&mut self.deferred);
        for (row, free) in deferred {
            if !self.star && !self.bound.contains(&free.name) {
                self.out.push(Pending::undefined(row, free));
            }
        }
        std::mem::take(&mut self.out)
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
