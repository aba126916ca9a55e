//! Flow-insensitive pyflakes-style scope analysis of one subtree (a "unit") of a tree-sitter
//! Python tree: which names it binds in its enclosing scope, which loads it leaves unresolved,
//! duplicate arguments, and a few constructs tree-sitter accepts but CPython rejects.
//!
//! The walk uses an explicit work stack, so deeply nested expressions cannot overflow the stack.

use std::collections::HashSet;

use tree_sitter::Node;

use super::python_builtins::is_builtin;
use super::python_tokens::SyntaxProblem;

/// Whether the unit sits directly in the module or in a class body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Base {
    Module,
    Class,
}

/// A load that no scope inside the unit binds; it is resolved against the enclosing scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FreeName {
    pub name: String,
    /// Row relative to the unit's first row, and byte column.
    pub row: usize,
    pub col: usize,
    /// A class body enclosing the unit is visible from this load (pyflakes: only direct
    /// loads and loads in comprehensions or type scopes see class names).
    pub class_visible: bool,
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
    /// Names bound in the enclosing (base) scope.
    pub binds: Vec<String>,
    /// Names declared `global`/`nonlocal` anywhere inside: pyflakes binds them in the module.
    pub module_binds: Vec<String>,
    pub free: Vec<FreeName>,
    /// `del name` at the base scope, checked against the base scope's bindings only.
    pub deletes: Vec<FreeName>,
    pub diagnostics: Vec<UnitDiagnostic>,
    pub syntax: Vec<SyntaxProblem>,
    pub star_import: bool,
    /// The module may create names at run time (`exec`, writes through `globals()`, ...).
    pub dynamic: bool,
    pub exports: Vec<ExportOp>,
    /// Type parameters of a class header, visible to every member of the class.
    pub type_params: Vec<String>,
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
    pub(super) binds: HashSet<String>,
}

pub(super) struct Use {
    pub(super) name: String,
    pub(super) row: usize,
    pub(super) col: usize,
    pub(super) scope: usize,
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
        uses: Vec::new(),
        deletes: Vec::new(),
        facts: Facts::default(),
        stack: Vec::new(),
    };
    analyzer.push(Item {
        node: unit,
        scope: 0,
        mode: Mode::Load,
        guarded: false,
        conditional: false,
    });
    while let Some(item) = analyzer.stack.pop() {
        analyzer.visit(item);
    }
    analyzer.resolve();
    analyzer.facts
}

pub(super) struct Analyzer<'a, 'tree> {
    pub(super) src: &'a [u8],
    pub(super) base: Base,
    pub(super) header_only: bool,
    pub(super) base_row: usize,
    pub(super) scopes: Vec<Scope>,
    pub(super) uses: Vec<Use>,
    pub(super) deletes: Vec<(Use, bool)>,
    pub(super) facts: Facts,
    pub(super) stack: Vec<Item<'tree>>,
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
        self.stack.push(item);
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

    pub(super) fn new_scope(&mut self, kind: ScopeKind, parent: usize) -> usize {
        self.scopes.push(Scope {
            kind,
            parent,
            binds: HashSet::new(),
        });
        self.scopes.len() - 1
    }

    pub(super) fn bind(&mut self, scope: usize, name: &str) {
        if scope == 0 {
            self.facts.binds.push(name.to_owned());
        }
        if let Some(scope) = self.scopes.get_mut(scope) {
            scope.binds.insert(name.to_owned());
        }
    }

    pub(super) fn load(&mut self, node: Node<'_>, scope: usize, guarded: bool) {
        if guarded {
            return;
        }
        let (row, col) = self.position(node);
        let name = self.text(node).to_owned();
        self.uses.push(Use {
            name,
            row,
            col,
            scope,
        });
    }

    pub(super) fn syntax(&mut self, node: Node<'_>, message: &str) {
        let (row, col) = self.position(node);
        self.facts
            .syntax
            .push(SyntaxProblem::new(row, col, message));
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
            "identifier" => self.load(node, item.scope, item.guarded),
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
            "call" => self.visit_call(item),
            "argument_list" => {
                self.check_arguments(node);
                self.push_children(item, Mode::Load);
            }
            "lambda" => self.visit_lambda(item),
            kind if is_comprehension(kind) => {
                let scope = self.new_scope(ScopeKind::Generator, item.scope);
                self.push_children(Item { scope, ..item }, Mode::Load);
            }
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

    /// `for` targets bind; the iterable, body and `else` are loads.
    fn visit_for(&mut self, item: Item<'tree>) {
        let node = item.node;
        let left = node.child_by_field_name("left");
        self.push_node(item, left, Mode::Store, item.scope);
        let mut cursor = node.walk();
        let rest: Vec<Node<'tree>> = node
            .named_children(&mut cursor)
            .filter(|child| Some(*child) != left)
            .collect();
        for child in rest.into_iter().rev() {
            self.push(Item {
                node: child,
                mode: Mode::Load,
                ..item
            });
        }
    }

    /// A walrus binds in the nearest scope that is not a comprehension.
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
        if let Some(name) = node.child_by_field_name("name") {
            let name = self.text(name).to_owned();
            self.bind(scope, &name);
        }
        self.push_node(
            item,
            node.child_by_field_name("value"),
            Mode::Load,
            item.scope,
        );
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
            "except_clause" => {
                self.push_node(
                    item,
                    node.child_by_field_name("alias"),
                    Mode::Store,
                    item.scope,
                );
                let alias = node.child_by_field_name("alias");
                let mut cursor = node.walk();
                let rest: Vec<Node<'tree>> = node
                    .named_children(&mut cursor)
                    .filter(|c| Some(*c) != alias)
                    .collect();
                for child in rest.into_iter().rev() {
                    self.push(Item {
                        node: child,
                        mode: Mode::Load,
                        ..item
                    });
                }
            }
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
                if node.kind() == "exec_statement" {
                    self.facts.dynamic = true;
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
                let name = self.text(node).to_owned();
                if item.mode == Mode::Store {
                    self.bind(item.scope, &name);
                } else {
                    let (row, col) = self.position(node);
                    let entry = Use {
                        name,
                        row,
                        col,
                        scope: item.scope,
                    };
                    self.deletes.push((entry, item.conditional));
                }
            }
            "attribute" => {
                let object = node.child_by_field_name("object");
                if object.is_some_and(|o| matches!(self.text(o), "builtins" | "__builtins__")) {
                    self.facts.dynamic = true;
                }
                self.push_node(item, object, Mode::Load, item.scope);
            }
            "subscript" => {
                let value = node.child_by_field_name("value");
                if value
                    .is_some_and(|v| self.is_namespace_call(v) || self.text(v) == "__builtins__")
                {
                    self.facts.dynamic = true;
                }
                self.push_children(item, Mode::Load);
            }
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

    /// Resolves every recorded load through its scope chain, as pyflakes' `handleNodeLoad`
    /// does, and turns what is left into [`FreeName`]s and `del` checks.
    fn resolve(&mut self) {
        let uses = std::mem::take(&mut self.uses);
        for entry in uses {
            if let Some(class_visible) = self.escapes(&entry.name, entry.scope) {
                let direct_in_class = entry.scope == 0 && self.base == Base::Class;
                let class_magic = matches!(entry.name.as_str(), "__module__" | "__qualname__");
                let class_cell = entry.name == "__class__" && self.base == Base::Class;
                if is_builtin(&entry.name) || (direct_in_class && class_magic) || class_cell {
                    continue;
                }
                self.facts.free.push(FreeName {
                    name: entry.name,
                    row: entry.row,
                    col: entry.col,
                    class_visible,
                });
            }
        }
        let deletes = std::mem::take(&mut self.deletes);
        for (entry, conditional) in deletes {
            if conditional || self.scopes[entry.scope].binds.contains(&entry.name) {
                continue;
            }
            if entry.scope == 0 {
                self.facts.deletes.push(FreeName {
                    name: entry.name,
                    row: entry.row,
                    col: entry.col,
                    class_visible: true,
                });
            } else {
                self.facts.diagnostics.push(UnitDiagnostic {
                    row: entry.row,
                    col: entry.col,
                    code: "F821",
                    message: format!("undefined name '{}'", entry.name),
                });
            }
        }
    }

    /// None when `name` is bound inside the unit; otherwise whether the base class scope
    /// (if any) is visible from the load.
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
        if self.scopes[0].binds.contains(name)
            && (self.base == Base::Module || can_access != Some(false))
        {
            return None;
        }
        Some(can_access != Some(false))
    }
}
