//! Pyflakes-style scope analysis of one subtree (a "unit") of a tree-sitter Python tree, in
//! pyflakes' order: statements are walked in source order (an assignment's value before its
//! targets, a `for`'s iterable before its target, a comprehension's clauses before its element),
//! and function and lambda bodies are deferred until the rest is done, as pyflakes defers them
//! to the end of the module. A load sees what is bound at that moment: a local read before its
//! first assignment is undefined, a module-level use before the definition too, while a body
//! that runs later sees its enclosing scopes complete.
//!
//! What reaches the unit's base scope (the module, or a class body) cannot be decided here: it
//! is recorded as ordered [`BaseEvent`]s, or as a deferred load, and
//! [`super::python_names`] replays every unit's events in module order.
//!
//! The walk uses an explicit work stack, so deeply nested expressions cannot overflow the stack.

use std::collections::{HashSet, VecDeque};

use tree_sitter::Node;

use super::python_builtins::is_builtin;
use super::python_tokens::SyntaxProblem;

/// Whether the unit sits directly in the module or in a class body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Base {
    Module,
    Class,
}

/// A name looked up (or deleted) in the unit's base scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FreeName {
    pub name: String,
    /// Row relative to the unit's first row, and byte column.
    pub row: usize,
    pub col: usize,
    /// A class body enclosing the unit is visible from this load (pyflakes: only direct
    /// loads and loads in comprehensions or type scopes see class names).
    pub class_visible: bool,
    /// The load is part of an annotation (deferred under `from __future__ import annotations`).
    pub annotation: bool,
}

/// What the unit does to its base scope, in pyflakes' order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BaseEvent {
    /// A binding (assignment, import, definition, loop target, ...).
    Bind(String),
    /// An annotation without a value (`x: int`): no binding a load can see, but a name
    /// `__all__` may list.
    Annotate(String),
    /// A load the unit's own scopes do not bind.
    Load(FreeName),
    /// An unconditional `del name`.
    Delete(FreeName),
    /// `except ... as name:` starts: the name is bound for the handler.
    ExceptEnter(String),
    /// The handler ends: the name is unbound again, unless it was bound before.
    ExceptExit(String),
    /// `from module import *`.
    StarImport,
    /// `from __future__ import annotations`.
    FutureAnnotations,
}

/// How `__all__` is changed by one statement at module level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExportOp {
    pub extend: bool,
    pub names: Vec<String>,
    pub row: usize,
    pub col: usize,
    pub byte: usize,
}

/// A finished diagnostic (code and message) at a unit-relative row and byte column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UnitDiagnostic {
    pub row: usize,
    pub col: usize,
    pub code: &'static str,
    pub message: String,
}

/// What one unit contributes to the module-level verdict. Rows are relative to the unit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Facts {
    /// What the unit does to its base scope, in order.
    pub events: Vec<BaseEvent>,
    /// Loads from deferred code (function and lambda bodies, and the annotations in them)
    /// that reach the base scope: they see the module as it is at its end.
    pub deferred: Vec<FreeName>,
    /// Names declared `global`/`nonlocal` below the module scope: pyflakes binds them in the
    /// module and takes back every undefined-name report for them.
    pub module_binds: Vec<String>,
    /// `del name` of a name its (inner) scope does not bind.
    pub undefined: Vec<FreeName>,
    pub diagnostics: Vec<UnitDiagnostic>,
    pub syntax: Vec<SyntaxProblem>,
    pub exports: Vec<ExportOp>,
    /// Type parameters of a class header, visible to every member of the class.
    pub type_params: Vec<String>,
    /// For a class header analysed without its body: the class's name, bound in the module
    /// after the body.
    pub class_name: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ScopeKind {
    Base,
    Function,
    Class,
    Generator,
    Type,
}

pub(super) struct Scope {
    pub(super) kind: ScopeKind,
    pub(super) parent: usize,
    /// What is bound in the scope now.
    pub(super) binds: HashSet<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Load,
    Store,
    Delete,
    Pattern,
}

#[derive(Clone, Copy)]
pub(super) struct Item<'tree> {
    pub(super) node: Node<'tree>,
    pub(super) scope: usize,
    pub(super) mode: Mode,
    /// Inside a `try` body whose handlers catch `NameError` (pyflakes skips F821 there).
    pub(super) guarded: bool,
    /// Inside an `if`/`while`/conditional expression (pyflakes skips F821 for `del` there).
    pub(super) conditional: bool,
    /// Part of an annotation.
    pub(super) annotation: bool,
    /// Inside a `return`, `yield` or `await` outside any function: pyflakes reports it
    /// (F706, F704) and looks no further, so nothing there is loaded, bound or checked by
    /// name; CPython's parse errors there are still found.
    pub(super) unseen: bool,
}

/// One step of the walk.
pub(super) enum Work<'tree> {
    /// Analyse a node.
    Visit(Item<'tree>),
    /// Bind a name in a scope (after the parts of its statement that come first).
    Bind { scope: usize, name: String },
    /// `except ... as name:` enters its handler.
    ExceptEnter { scope: usize, name: String },
    /// The handler is done.
    ExceptExit { scope: usize, name: String },
    /// Queue a body to run after everything that is not deferred.
    Defer(Vec<Work<'tree>>),
}

/// Where the walk is: the unit's own code, the deferred bodies, or the annotations met in
/// deferred bodies (resolved last, against complete scopes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Immediate,
    Deferred,
    Late,
}

/// Analyses the subtree `unit` whose enclosing scope is `base`. With `header_only`, a class
/// definition at the top of the unit is analysed without its body (whose statements are
/// analysed as units of their own).
pub(crate) fn analyze(
    unit: Node<'_>,
    src: &[u8],
    base: Base,
    base_row: usize,
    header_only: bool,
) -> Facts {
    let mut analyzer = Analyzer {
        src,
        base,
        header_only,
        base_row,
        scopes: vec![Scope {
            kind: ScopeKind::Base,
            parent: 0,
            binds: HashSet::new(),
        }],
        facts: Facts::default(),
        stack: Vec::new(),
        deferred: VecDeque::new(),
        late: Vec::new(),
        phase: Phase::Immediate,
        except_saved: Vec::new(),
    };
    analyzer.push(Item {
        node: unit,
        scope: 0,
        mode: Mode::Load,
        guarded: false,
        conditional: false,
        annotation: false,
        unseen: false,
    });
    loop {
        while let Some(work) = analyzer.stack.pop() {
            analyzer.run(work);
        }
        if let Some(body) = analyzer.deferred.pop_front() {
            analyzer.phase = Phase::Deferred;
            analyzer.stack.extend(body.into_iter().rev());
        } else if !analyzer.late.is_empty() {
            analyzer.phase = Phase::Late;
            let late = std::mem::take(&mut analyzer.late);
            analyzer
                .stack
                .extend(late.into_iter().rev().map(Work::Visit));
        } else {
            break;
        }
    }
    analyzer.facts
}

pub(super) struct Analyzer<'a, 'tree> {
    pub(super) src: &'a [u8],
    pub(super) base: Base,
    pub(super) header_only: bool,
    pub(super) base_row: usize,
    pub(super) scopes: Vec<Scope>,
    pub(super) facts: Facts,
    pub(super) stack: Vec<Work<'tree>>,
    pub(super) deferred: VecDeque<Vec<Work<'tree>>>,
    pub(super) late: Vec<Item<'tree>>,
    pub(super) phase: Phase,
    /// For each open `except ... as name:` of an inner scope: whether the name was bound
    /// before the handler.
    pub(super) except_saved: Vec<bool>,
}

fn is_comprehension(kind: &str) -> bool {
    matches!(
        kind,
        "list_comprehension"
            | "set_comprehension"
            | "dictionary_comprehension"
            | "generator_expression"
    )
}

impl<'tree> Analyzer<'_, 'tree> {
    pub(super) fn text(&self, node: Node<'_>) -> &str {
        std::str::from_utf8(&self.src[node.byte_range()]).unwrap_or("")
    }

    pub(super) fn position(&self, node: Node<'_>) -> (usize, usize) {
        let point = node.start_position();
        (point.row.saturating_sub(self.base_row), point.column)
    }

    pub(super) fn push(&mut self, item: Item<'tree>) {
        self.stack.push(Work::Visit(item));
    }

    /// Queues `works` to run in the order given (the stack runs the last pushed first).
    pub(super) fn push_in_order(&mut self, works: Vec<Work<'tree>>) {
        self.stack.extend(works.into_iter().rev());
    }

    pub(super) fn push_children(&mut self, item: Item<'tree>, mode: Mode) {
        let mut cursor = item.node.walk();
        let children: Vec<Node<'tree>> = item.node.named_children(&mut cursor).collect();
        for child in children.into_iter().rev() {
            self.push(Item {
                node: child,
                mode,
                ..item
            });
        }
    }

    pub(super) fn push_node(
        &mut self,
        item: Item<'tree>,
        node: Option<Node<'tree>>,
        mode: Mode,
        scope: usize,
    ) {
        if let Some(node) = node {
            self.push(Item {
                node,
                mode,
                scope,
                ..item
            });
        }
    }

    /// A visit of `node` in `mode` and `scope`, with `item`'s other flags.
    pub(super) fn visit_of(
        item: Item<'tree>,
        node: Node<'tree>,
        mode: Mode,
        scope: usize,
    ) -> Work<'tree> {
        Work::Visit(Item {
            node,
            mode,
            scope,
            ..item
        })
    }

    pub(super) fn new_scope(&mut self, kind: ScopeKind, parent: usize) -> usize {
        self.scopes.push(Scope {
            kind,
            parent,
            binds: HashSet::new(),
        });
        self.scopes.len() - 1
    }

    /// Binds `name` in `scope` now. In the base scope that is an event for the module pass;
    /// deferred code binds nothing there but `global` names, which are recorded apart.
    pub(super) fn bind(&mut self, scope: usize, name: &str) {
        if scope == 0 {
            if self.phase == Phase::Immediate {
                self.facts.events.push(BaseEvent::Bind(name.to_owned()));
            }
        } else if let Some(scope) = self.scopes.get_mut(scope) {
            scope.binds.insert(name.to_owned());
        }
    }

    pub(super) fn load(&mut self, node: Node<'_>, item: Item<'_>) {
        if item.guarded || item.unseen {
            return;
        }
        let name = self.text(node).to_owned();
        let Some(class_visible) = self.escapes(&name, item.scope) else {
            return;
        };
        let in_class = match self.scopes.get(item.scope) {
            Some(scope) if item.scope != 0 => scope.kind == ScopeKind::Class,
            _ => self.base == Base::Class,
        };
        let class_magic = matches!(name.as_str(), "__module__" | "__qualname__");
        let class_cell = name == "__class__" && self.base == Base::Class;
        if is_builtin(&name) || (in_class && class_magic) || class_cell {
            return;
        }
        let (row, col) = self.position(node);
        let free = FreeName {
            name,
            row,
            col,
            class_visible,
            annotation: item.annotation,
        };
        if self.phase == Phase::Immediate {
            self.facts.events.push(BaseEvent::Load(free));
        } else {
            self.facts.deferred.push(free);
        }
    }

    fn delete(&mut self, node: Node<'_>, item: Item<'_>) {
        if item.conditional {
            return;
        }
        let name = self.text(node).to_owned();
        let (row, col) = self.position(node);
        let free = FreeName {
            name,
            row,
            col,
            class_visible: true,
            annotation: false,
        };
        if item.scope == 0 {
            if self.phase == Phase::Immediate {
                self.facts.events.push(BaseEvent::Delete(free));
            }
        } else if let Some(scope) = self.scopes.get_mut(item.scope)
            && !scope.binds.remove(&free.name)
        {
            self.facts.undefined.push(free);
        }
    }

    pub(super) fn syntax(&mut self, node: Node<'_>, message: &str) {
        let (row, col) = self.position(node);
        self.facts
            .syntax
            .push(SyntaxProblem::new(row, col, message));
    }

    fn run(&mut self, work: Work<'tree>) {
        match work {
            Work::Visit(item) => {
                if item.annotation && self.phase == Phase::Deferred {
                    self.late.push(item);
                } else {
                    self.visit(item);
                }
            }
            Work::Bind { scope, name } => self.bind(scope, &name),
            Work::ExceptEnter { scope, name } => {
                if scope == 0 {
                    if self.phase == Phase::Immediate {
                        self.facts.events.push(BaseEvent::ExceptEnter(name));
                    }
                } else if let Some(data) = self.scopes.get_mut(scope) {
                    let before = !data.binds.insert(name);
                    self.except_saved.push(before);
                }
            }
            Work::ExceptExit { scope, name } => {
                if scope == 0 {
                    if self.phase == Phase::Immediate {
                        self.facts.events.push(BaseEvent::ExceptExit(name));
                    }
                } else {
                    let before = self.except_saved.pop().unwrap_or(false);
                    if let Some(data) = self.scopes.get_mut(scope)
                        && !before
                    {
                        data.binds.remove(&name);
                    }
                }
            }
            Work::Defer(body) => self.deferred.push_back(body),
        }
    }

    fn visit(&mut self, item: Item<'tree>) {
        let node = item.node;
        if node.is_error() || node.is_missing() {
            return;
        }
        match item.mode {
            Mode::Store | Mode::Delete => return self.visit_target(item),
            Mode::Pattern => return self.visit_pattern(item),
            Mode::Load => {}
        }
        match node.kind() {
            "identifier" => self.load(node, item),
            "attribute" => self.push_node(
                item,
                node.child_by_field_name("object"),
                Mode::Load,
                item.scope,
            ),
            "keyword_argument" => self.push_node(
                item,
                node.child_by_field_name("value"),
                Mode::Load,
                item.scope,
            ),
            "call" => self.push_children(item, Mode::Load),
            "argument_list" => {
                self.check_arguments(node);
                self.push_children(item, Mode::Load);
            }
            "return_statement" | "yield" | "await" if self.outside_function(item.scope) => self
                .push_children(
                    Item {
                        unseen: true,
                        ..item
                    },
                    Mode::Load,
                ),
            "lambda" => self.visit_lambda(item),
            kind if is_comprehension(kind) => self.visit_comprehension(item),
            "for_in_clause" | "for_statement" => self.visit_for(item),
            "named_expression" => self.visit_walrus(item),
            "string" => self.visit_string(item),
            "member_type" => self.push_node(item, node.named_child(0), Mode::Load, item.scope),
            "dotted_name" => self.push_node(item, node.named_child(0), Mode::Load, item.scope),
            "if_statement" | "while_statement" | "conditional_expression" => self.push_children(
                Item {
                    conditional: true,
                    ..item
                },
                Mode::Load,
            ),
            "comparison_operator" => {
                let mut cursor = node.walk();
                let diamond = node
                    .children(&mut cursor)
                    .find(|child| child.kind() == "<>");
                if let Some(diamond) = diamond {
                    self.syntax(diamond, "SyntaxError: invalid syntax");
                }
                self.push_children(item, Mode::Load);
            }
            "comment" | "string_content" | "escape_sequence" | "type_conversion" | "integer"
            | "float" | "true" | "false" | "none" | "ellipsis" => {}
            _ => self.visit_statement(item),
        }
    }

    /// The iterable first, then the target, then the body and `else` (pyflakes handles a
    /// node's `iter` field first).
    fn visit_for(&mut self, item: Item<'tree>) {
        let node = item.node;
        let left = node.child_by_field_name("left");
        let mut cursor = node.walk();
        let rest: Vec<Node<'tree>> = node
            .named_children(&mut cursor)
            .filter(|child| Some(*child) != left)
            .collect();
        let (iterables, blocks): (Vec<_>, Vec<_>) = rest
            .into_iter()
            .partition(|child| !matches!(child.kind(), "block" | "else_clause"));
        let mut works: Vec<Work<'tree>> = iterables
            .into_iter()
            .map(|child| Self::visit_of(item, child, Mode::Load, item.scope))
            .collect();
        works.extend(left.map(|left| Self::visit_of(item, left, Mode::Store, item.scope)));
        works.extend(
            blocks
                .into_iter()
                .map(|child| Self::visit_of(item, child, Mode::Load, item.scope)),
        );
        self.push_in_order(works);
    }

    /// A comprehension's own scope: its clauses in order, then its element.
    fn visit_comprehension(&mut self, item: Item<'tree>) {
        let node = item.node;
        let scope = self.new_scope(ScopeKind::Generator, item.scope);
        let body = node.child_by_field_name("body");
        let mut cursor = node.walk();
        let mut works: Vec<Work<'tree>> = node
            .named_children(&mut cursor)
            .filter(|child| Some(*child) != body)
            .map(|child| Self::visit_of(item, child, Mode::Load, scope))
            .collect();
        works.extend(body.map(|body| Self::visit_of(item, body, Mode::Load, scope)));
        self.push_in_order(works);
    }

    /// The value first; then the name is bound in the nearest scope that is not a
    /// comprehension.
    fn visit_walrus(&mut self, item: Item<'tree>) {
        let node = item.node;
        let mut scope = item.scope;
        while self
            .scopes
            .get(scope)
            .is_some_and(|s| s.kind == ScopeKind::Generator)
        {
            scope = self.scopes[scope].parent;
        }
        let mut works = Vec::new();
        if let Some(value) = node.child_by_field_name("value") {
            works.push(Self::visit_of(item, value, Mode::Load, item.scope));
        }
        if let Some(name) = node.child_by_field_name("name").filter(|_| !item.unseen) {
            let name = self.text(name).to_owned();
            works.push(Work::Bind { scope, name });
        }
        self.push_in_order(works);
    }

    /// Only the replacement fields of an f-string hold names (string annotations are not
    /// checked).
    fn visit_string(&mut self, item: Item<'tree>) {
        let mut cursor = item.node.walk();
        let fields: Vec<Node<'tree>> = item
            .node
            .named_children(&mut cursor)
            .filter(|child| child.kind() == "interpolation")
            .collect();
        for field in fields.into_iter().rev() {
            self.push(Item {
                node: field,
                mode: Mode::Load,
                ..item
            });
        }
    }

    fn visit_statement(&mut self, item: Item<'tree>) {
        let node = item.node;
        match node.kind() {
            "assignment" => self.visit_assignment(item),
            "augmented_assignment" => self.visit_augmented(item),
            "import_statement" | "import_from_statement" | "future_import_statement" => {
                self.visit_import(item)
            }
            "global_statement" | "nonlocal_statement" => self.visit_global(item),
            "delete_statement" => self.push_children(item, Mode::Delete),
            "function_definition" => self.visit_function(item),
            "class_definition" => self.visit_class(item),
            "try_statement" => self.visit_try(item),
            "except_clause" => self.visit_except(item),
            "as_pattern" => {
                let alias = node.child_by_field_name("alias");
                self.push_node(item, alias, Mode::Store, item.scope);
                self.push_node(item, node.named_child(0), Mode::Load, item.scope);
            }
            "case_clause" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'tree>> = node.named_children(&mut cursor).collect();
                for child in children.into_iter().rev() {
                    let mode = if child.kind() == "case_pattern" {
                        Mode::Pattern
                    } else {
                        Mode::Load
                    };
                    self.push(Item {
                        node: child,
                        mode,
                        ..item
                    });
                }
            }
            "type_alias_statement" => self.visit_type_alias(item),
            "print_statement" | "exec_statement" => {
                let chevron = node.named_child(0).is_some_and(|c| c.kind() == "chevron");
                if !chevron {
                    let which = if node.kind() == "print_statement" {
                        "print"
                    } else {
                        "exec"
                    };
                    self.syntax(
                        node,
                        &format!("SyntaxError: Missing parentheses in call to '{which}'. Did you mean {which}(...)?"),
                    );
                }
                self.push_children(item, Mode::Load);
            }
            _ => self.push_children(item, Mode::Load),
        }
    }

    /// Assignment targets (`Store`) and `del` targets (`Delete`).
    fn visit_target(&mut self, item: Item<'tree>) {
        let node = item.node;
        match node.kind() {
            "identifier" => {
                if item.mode == Mode::Store {
                    let name = self.text(node).to_owned();
                    self.bind(item.scope, &name);
                } else {
                    self.delete(node, item);
                }
            }
            "attribute" => {
                let object = node.child_by_field_name("object");
                self.push_node(item, object, Mode::Load, item.scope);
            }
            "subscript" => self.push_children(item, Mode::Load),
            "tuple_pattern"
            | "list_pattern"
            | "pattern_list"
            | "tuple"
            | "list"
            | "parenthesized_expression"
            | "list_splat_pattern"
            | "list_splat"
            | "expression_list"
            | "as_pattern_target" => self.push_children(item, item.mode),
            _ => self.push(Item {
                mode: Mode::Load,
                ..item
            }),
        }
    }

    /// Whether `scope` is the module or a class body, where pyflakes does not look into a
    /// `return`, `yield` or `await`.
    fn outside_function(&self, scope: usize) -> bool {
        scope == 0
            || self
                .scopes
                .get(scope)
                .is_some_and(|s| s.kind == ScopeKind::Class)
    }

    /// None when `name` is bound in the unit's own scopes now (or is `__class__` seen from a
    /// class); otherwise whether the base class scope (if any) is visible from the load, as
    /// pyflakes' `handleNodeLoad` walks the scopes.
    fn escapes(&self, name: &str, scope: usize) -> Option<bool> {
        let mut can_access: Option<bool> = None;
        let mut current = scope;
        while current != 0 {
            let Some(data) = self.scopes.get(current) else {
                break;
            };
            let skip = data.kind == ScopeKind::Class && {
                if name == "__class__" {
                    return None;
                }
                can_access == Some(false)
            };
            if !skip {
                if data.binds.contains(name) {
                    return None;
                }
                if can_access != Some(false) {
                    can_access = Some(matches!(data.kind, ScopeKind::Generator | ScopeKind::Type));
                }
            }
            current = data.parent;
        }
        Some(can_access != Some(false))
    }
}
